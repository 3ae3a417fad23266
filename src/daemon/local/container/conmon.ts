/**
 * conmon (the containers project's monitor, Debian's `conmon`) holds each
 * server's standard streams from outside its box (docs/reference/power-and-console.md#servers-outlive-the-service): it runs `runc
 * create` with pipes as the container's stdin, stdout and stderr, writes what
 * comes out to a size-capped log in Kubernetes' format
 * (`<RFC 3339 time> stdout|stderr P|F <text>`), records the exit status in
 * `--exit-dir` and exits after the container. It is its own session's leader
 * and its parent is the host's init, so it outlives the service (stopped or
 * SIGKILLed); the next service adopts the container it watches.
 *
 * What conmon 2.1.6 does at `--log-size-max` (src/ctr_logging.c,
 * `reopen_k8s_file`): before a write that would take the bytes it has
 * written since it opened the log past the cap, it opens `<log>.tmp` empty and
 * renames it over the log: the old content is gone, the log starts again
 * empty. The count starts at 0 in each conmon, not at the file's size, so the
 * service moves a previous run's log aside (`<log>.1`) before each start: the
 * log and that one copy are each at most the cap.
 *
 * A SIGKILL of the service while `startMonitored` runs: conmon (its own
 * session) finishes `runc create` regardless; the container is then `created`
 * (never started: the service runs `runc start`) and the next start removes
 * it (`sweep`, or the launcher before a new start).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** Where distributions put conmon (Debian: /usr/bin; Podman's own builds: /usr/libexec/podman). */
const CONMON_PATHS = [
  '/usr/bin/conmon',
  '/usr/local/bin/conmon',
  '/usr/libexec/podman/conmon',
  '/usr/local/libexec/podman/conmon',
];
/** `runc create` on a loaded 2-core machine takes well under a second; this bounds a conmon that never answers. */
const CREATE_TIMEOUT_MS = 30_000;

export interface MonitorFiles {
  /** The server's console log (k8s-file); capped at `logSizeMax`. */
  readonly log: string;
  /** Where conmon writes `<container id>` holding the exit status: the service's own folder, not the box's. */
  readonly exitDir: string;
  /** conmon's own pid (`-P`). */
  readonly conmonPidFile: string;
  /** The container's first process's host pid (`-p`, passed on to runc). */
  readonly containerPidFile: string;
  /** runc's own messages (JSON lines): why a create failed. */
  readonly runcLog: string;
}

export interface MonitoredStart {
  readonly containerPid: number;
  readonly conmonPid: number;
}

export class MonitorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MonitorError';
  }
}

/** The absolute path of conmon, or null. */
export function findConmon(): string | null {
  for (const candidate of CONMON_PATHS) {
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * Has conmon create the container (not start it: `runc start` does that, so
 * that the service sees a created container before any of the server's code
 * runs). Resolves once runc created it, with the container's host pid;
 * rejects with runc's reason otherwise.
 */
export async function startMonitored(options: {
  conmon: string;
  runc: string;
  runcRoot: string;
  id: string;
  bundleDir: string;
  files: MonitorFiles;
  logSizeMax: number;
}): Promise<MonitoredStart> {
  const { files } = options;
  await fs.promises.mkdir(options.runcRoot, { recursive: true, mode: 0o700 });
  await fs.promises.mkdir(files.exitDir, { recursive: true, mode: 0o700 });
  await Promise.all(
    [files.containerPidFile, files.conmonPidFile, exitFile(files.exitDir, options.id)].map((file) =>
      fs.promises.rm(file, { force: true }),
    ),
  );
  const args = [
    '--api-version',
    '1',
    '-c',
    options.id,
    '-u',
    options.id,
    '-n',
    options.id,
    '-r',
    options.runc,
    '--runtime-arg',
    `--root=${options.runcRoot}`,
    '--runtime-arg',
    `--log=${files.runcLog}`,
    '--runtime-arg',
    '--log-format=json',
    '-b',
    options.bundleDir,
    '-p',
    files.containerPidFile,
    '-P',
    files.conmonPidFile,
    '--exit-dir',
    files.exitDir,
    '-l',
    `k8s-file:${files.log}`,
    '--log-size-max',
    String(Math.max(options.logSizeMax, 4096)),
    // A pipe for the container's stdin, its write end held by conmon: the server never reads EOF while
    // conmon lives, and the service writes to it through /proc/<container pid>/fd/0 (the same pipe).
    '-i',
    '--socket-dir-path',
    options.bundleDir,
    // Its `oom` and `exit` files go here, not to its working folder (the service's).
    '-0',
    options.bundleDir,
    '--no-sync-log',
  ];
  const child = spawn(options.conmon, args, {
    cwd: options.bundleDir,
    // Its own session from the start: a Ctrl-C aimed at the service's process group must not reach it.
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    // conmon reports the create's outcome on this pipe: `{"data": pid}` or `{"data": -1, "message": ...}`.
    env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', _OCI_SYNCPIPE: '3' },
  });
  child.unref();
  const sync = child.stdio[3] as NodeJS.ReadableStream & { destroy(): void };
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4096)));
  const answer = await new Promise<string>((resolve, reject) => {
    let text = '';
    const timer = setTimeout(
      () => reject(new MonitorError(`conmon gave no answer within ${CREATE_TIMEOUT_MS} ms`)),
      CREATE_TIMEOUT_MS,
    );
    const done = (value: string | Error) => {
      clearTimeout(timer);
      if (value instanceof Error) reject(value);
      else resolve(value);
    };
    sync.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const newline = text.indexOf('\n');
      if (newline !== -1) done(text.slice(0, newline));
    });
    // Every conmon holding the pipe gone without a word: it failed before the create.
    sync.on('end', () => done(new MonitorError(`conmon ended without an answer: ${stderr.trim() || 'no reason given'}`)));
    sync.on('error', (err) => done(err));
    child.once('error', (err) => done(err));
  }).finally(() => {
    sync.destroy();
    child.stderr?.destroy();
  });
  let parsed: { data?: unknown; message?: unknown };
  try {
    parsed = JSON.parse(answer) as typeof parsed;
  } catch {
    throw new MonitorError(`conmon answered something unexpected: ${answer}`);
  }
  if (typeof parsed.data !== 'number' || parsed.data <= 0) {
    const reason =
      (await lastRuncError(files.runcLog)) ?? (typeof parsed.message === 'string' ? parsed.message.trim() : 'no reason given');
    throw new MonitorError(`runc could not create ${options.id}: ${reason}`);
  }
  const conmonPid = Number((await fs.promises.readFile(files.conmonPidFile, 'utf8').catch(() => '0')).trim());
  return { containerPid: parsed.data, conmonPid };
}

export function exitFile(exitDir: string, id: string): string {
  return path.join(exitDir, id);
}

/** conmon's pid from its pid file, when that process is still a conmon; null otherwise. */
export function liveConmonPid(conmonPidFile: string): number | null {
  const pid = readConmonPid(conmonPidFile);
  return pid !== null && conmonAlive(pid) ? pid : null;
}

/** The pid conmon wrote (`-P`), or null. */
export function readConmonPid(conmonPidFile: string): number | null {
  try {
    const pid = Number(fs.readFileSync(conmonPidFile, 'utf8').trim());
    return Number.isInteger(pid) && pid > 1 ? pid : null;
  } catch {
    return null;
  }
}

/** Whether `pid` is a conmon that still runs: a zombie (Z) or dead (X) one holds nothing; a recycled pid is not conmon. */
export function conmonAlive(pid: number): boolean {
  try {
    return /^\d+ \(conmon\) [^ZX]/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** The last error runc logged (`--log-format json`), or null. */
export async function lastRuncError(runcLog: string): Promise<string | null> {
  const text = await fs.promises.readFile(runcLog, 'utf8').catch(() => '');
  for (const line of text.split('\n').reverse()) {
    try {
      const entry = JSON.parse(line) as { level?: string; msg?: string };
      if ((entry.level === 'error' || entry.level === 'fatal') && entry.msg) return entry.msg;
    } catch {
      // not JSON
    }
  }
  return null;
}
