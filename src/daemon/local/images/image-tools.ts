/**
 * The programs images are made with (docs/reference/eggs-and-installs.md): mmdebstrap (Debian's
 * packages), skopeo and umoci (container archives), each run so that it dies
 * with whoever started it. A build takes a minute and mounts /proc and /sys
 * inside its target: were the service (or the `image:build` command) killed
 * meanwhile, an orphaned mmdebstrap would go on writing into a folder the next
 * sweep removes, and its mounts would pin host file systems under it.
 *
 * So every tool runs as
 *   setpriv --pdeathsig KILL -- unshare --mount --propagation private --pid --kill-child --mount-proc -- TOOL ...
 * `setpriv` makes `unshare` receive SIGKILL when its parent (this process)
 * dies; `unshare --kill-child` does the same for the tool, which is PID 1 of
 * a PID namespace of its own, so the kernel ends every process it started
 * with it; and its mounts live in a mount namespace of its own (private:
 * nothing propagates back to the host), which vanishes with the last of them.
 * A SIGKILL at any instant leaves only files: the staging folder, which
 * image-store.ts's sweep removes.
 */
import { spawn } from 'node:child_process';
import { findTool } from '../network/tools.js';

/** How many of a failed tool's last output lines its error carries. */
const TAIL_LINES = 12;
/** A build on a slow mirror takes minutes; one stalled for this long is ended (and everything it started with it). */
const DEFAULT_TIMEOUT_MS = 30 * 60_000;

export class ImageToolError extends Error {
  constructor(
    readonly tool: string,
    message: string,
  ) {
    super(message);
    this.name = 'ImageToolError';
  }
}

/** The absolute path of `name`, or an ImageToolError naming the Debian package that brings it. */
export function requireTool(name: string, debianPackage = name): string {
  const found = findTool(name);
  if (found === null) throw new ImageToolError(name, `${name} is not installed (Debian package ${debianPackage})`);
  return found;
}

/**
 * Runs `tool args` confined as above; `onLine` gets each line of its output
 * (stdout and stderr). Rejects with the last lines when it fails.
 */
export function runImageTool(
  tool: string,
  args: readonly string[],
  onLine: (line: string) => void = () => undefined,
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<void> {
  const setpriv = requireTool('setpriv', 'util-linux');
  const unshare = requireTool('unshare', 'util-linux');
  const wrapped = [
    '--pdeathsig',
    'KILL',
    '--',
    unshare,
    '--mount',
    '--propagation',
    'private',
    '--pid',
    '--kill-child',
    '--mount-proc',
    '--',
    tool,
    ...args,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(setpriv, wrapped, {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
      env: opts.env ?? { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C.UTF-8' },
    });
    const tail: string[] = [];
    const take = (stream: NodeJS.ReadableStream) => {
      let pending = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        pending += chunk;
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) emit(line);
      });
      stream.on('end', () => {
        if (pending !== '') emit(pending);
      });
    };
    const emit = (line: string) => {
      const clean = line.replace(/\r$/, '');
      tail.push(clean);
      if (tail.length > TAIL_LINES) tail.shift();
      onLine(clean);
    };
    take(child.stdout);
    take(child.stderr);
    const name = tool.split('/').pop() ?? tool;
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    let timedOut = false;
    // SIGKILL to unshare: its child (the tool, PID 1 of its namespace) gets its parent-death signal, and the rest go with it.
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => reject(new ImageToolError(name, `${name} could not run: ${err.message}`)));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) return reject(new ImageToolError(name, `${name} did not finish within ${Math.round(timeoutMs / 1000)} s`));
      if (code === 0) return resolve();
      const why =
        tail
          .filter((line) => line.trim() !== '')
          .slice(-4)
          .join(' | ') || 'no output';
      reject(new ImageToolError(name, `${name} failed (${code ?? signal}): ${why}`));
    });
  });
}
