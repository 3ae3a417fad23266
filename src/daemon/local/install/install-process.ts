/**
 * An install without containment (CONTAINMENT=off, or `auto` where the
 * machine cannot confine): the script runs as a plain child process of the
 * service, as the service's user, as unconfined servers do (docs/reference/containment.md's
 * fallback). Nothing can be mounted at `/mnt/server`, so the script gets the
 * volume's real path in its place: every `/mnt/server` in the script's text
 * is replaced by it (eggs name the folder literally: `cd /mnt/server`,
 * `mkdir -p /mnt/server/...`), and it runs in the volume. The image is not
 * used: the machine's own programs run it (docs/INSTALLS.md).
 *
 * The child is its own process group; a SIGKILL of the service leaves it
 * running with its output pipes' other end gone (a write ends a shell by
 * SIGPIPE); the install record names its pid and start time, and the next
 * start's recovery SIGKILLs the group.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { InstallOutcome, InstallScript } from '../../daemon.js';
import { readProcStatSync } from '../process/proc.js';
import { lineSplitter } from './install-log.js';
import { INSTALL_VOLUME } from './install-box.js';

const PICK_SHELL =
  'if command -v "$0" >/dev/null 2>&1; then exec "$0" "$1" 2>&1; fi; echo "$0 is not on this machine: running the script with sh"; exec sh "$1" 2>&1';
const STANDARD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface StartedInstallProcess {
  readonly pid: number;
  readonly startTime: string | null;
  readonly outcome: Promise<InstallOutcome>;
}

export async function startInstallProcess(
  volumeDir: string,
  scriptFile: string,
  script: InstallScript,
  onLine: (line: string) => void,
): Promise<StartedInstallProcess> {
  const text = script.script.replace(/\r\n?/g, '\n').split(INSTALL_VOLUME).join(volumeDir);
  await fs.mkdir(path.dirname(scriptFile), { recursive: true, mode: 0o700 });
  await fs.writeFile(scriptFile, text, { mode: 0o600 });
  const entrypoint = /^[A-Za-z0-9/_.+-]{1,200}$/.test(script.entrypoint.trim()) ? script.entrypoint.trim() : 'sh';
  const child = spawn('/bin/sh', ['-c', PICK_SHELL, entrypoint, scriptFile], {
    cwd: volumeDir,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...script.environment, HOME: volumeDir, PATH: STANDARD_PATH, TMPDIR: '/tmp' },
  });
  const out = lineSplitter(onLine);
  const err = lineSplitter(onLine);
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const outcome = new Promise<InstallOutcome>((resolve) => {
    child.once('error', (error) => resolve({ exitCode: -1, error: `the install could not start: ${error.message}` }));
    child.once('close', (code, signal) => {
      out.flush();
      err.flush();
      resolve(code === null ? { exitCode: -1, error: `the install was ended by ${signal ?? 'a signal'}` } : { exitCode: code });
    });
  });
  const pid = child.pid ?? 0;
  return { pid, startTime: pid > 0 ? (readProcStatSync(pid)?.startTime ?? null) : null, outcome };
}

/** SIGKILLs the process group of an install a dead instance left, when that process is still the one recorded. */
export function killInstallProcess(recorded: { pid: number; startTime: string | null }): void {
  if (recorded.pid <= 1) return;
  const stat = readProcStatSync(recorded.pid);
  if (stat === null || (recorded.startTime !== null && stat.startTime !== recorded.startTime)) return;
  try {
    process.kill(-recorded.pid, 'SIGKILL');
  } catch {
    // Gone meanwhile.
  }
}
