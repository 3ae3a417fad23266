/**
 * The two programs the server network is made with: `ip` (iproute2) and
 * `nft` (nftables). Each is run with its input on stdin (a batch of ip
 * commands, a whole nftables table), so one start costs a handful of
 * processes, not one per rule.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const SEARCH_PATH = ['/usr/sbin', '/sbin', '/usr/bin', '/bin', '/usr/local/sbin', '/usr/local/bin'];
const TOOL_TIMEOUT_MS = 10_000;

export class NetworkToolError extends Error {
  constructor(
    readonly command: string,
    readonly stderr: string,
  ) {
    super(`${command} failed: ${stderr.trim() || 'no message'}`);
    this.name = 'NetworkToolError';
  }
}

/** The absolute path of `name` in PATH or the usual system folders, or null. */
export function findTool(name: string): string | null {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean), ...SEARCH_PATH];
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/** Runs `file args` with `input` on stdin; resolves with stdout, rejects with NetworkToolError (stderr in it). */
export function runTool(file: string, args: readonly string[], input = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'], timeout: TOOL_TIMEOUT_MS });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', (err) => reject(new NetworkToolError(`${file} ${args.join(' ')}`, err.message)));
    child.on('close', (code, signal) => {
      if (code === 0) resolve(stdout);
      else reject(new NetworkToolError(`${path.basename(file)} ${args.join(' ')}`, stderr || `exit ${code ?? signal}`));
    });
    child.stdin.on('error', () => undefined); // a tool that exits early closes its stdin: its exit status says why
    child.stdin.end(input);
  });
}
