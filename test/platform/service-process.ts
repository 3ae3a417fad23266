import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Starting the service as a host does (`npm start`, or node on bin/quetzal.js)
 * in a process group of its own, and looking at what is left of that group.
 */

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface StartedService {
  /** The process started: npm, or node. Leads its own process group. */
  proc: ChildProcess;
  port: number;
  dataDir: string;
  output(): string;
  /** Resolves with npm's (or node's) exit code and signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  dispose(): void;
}

/**
 * Spawns `command` in a fresh DATA_DIR on a free port with an environment a
 * process manager would give (none of the test runner's npm_* or database
 * variables), this Node first on PATH so that `npm start` runs the service on it.
 */
export async function startDetached(
  command: string,
  args: string[],
  extraEnv: Record<string, string> = {},
): Promise<StartedService> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-platform-'));
  const port = await freePort();
  const env: Record<string, string> = {
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
    HOME: process.env.HOME ?? os.homedir(),
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: String(port),
    // SFTP off: parallel services must not all bind 2022.
    SFTP_PORT: '0',
    LOG_LEVEL: 'info',
    ...extraEnv,
  };
  const proc = spawn(command, args, { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  proc.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  proc.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    proc,
    port,
    dataDir,
    output: () => output,
    exited,
    dispose() {
      // Whatever a failed test left running goes with it.
      try {
        process.kill(-proc.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Waits until GET /health answers 200, or fails when the process exits or time runs out. */
export async function waitHealthy(service: StartedService, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (service.proc.exitCode !== null || service.proc.signalCode !== null)
      throw new Error(`exited before answering /health:\n${service.output()}`);
    const ok = await fetch(`http://127.0.0.1:${service.port}/health`).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`no answer from /health within ${timeoutMs} ms:\n${service.output()}`);
}

/**
 * The processes still in group `pgid`, as "pid command" lines. A zombie is not
 * one: it has ended and only waits for its new parent (init) to reap it.
 */
export function groupMembers(pgid: number): string[] {
  const members: string[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // Ended while we looked.
    }
    // "pid (comm) state ppid pgrp ...": comm may contain spaces and parentheses.
    const close = stat.lastIndexOf(')');
    const [state, , pgrp] = stat.slice(close + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') members.push(`${entry} ${stat.slice(stat.indexOf('(') + 1, close)}`);
  }
  return members;
}

/** Polls until nothing of group `pgid` runs (see groupMembers); returns what is left at the deadline. */
export async function groupGone(pgid: number, timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      process.kill(-pgid, 0);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ESRCH') return [];
      throw err;
    }
    const left = groupMembers(pgid);
    if (left.length === 0 || Date.now() >= deadline) return left;
    await sleep(100);
  }
}

/** Whether something accepts connections on 127.0.0.1:port. */
export function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
