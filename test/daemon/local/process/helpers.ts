/**
 * What the process supervisor's tests share: the echo fixture (a stand-in game
 * server) and a few shell one-liners as servers, other service instances
 * (supervisors in other Node processes, test/fixtures/supervisor-host.ts), and
 * a sandbox of folders per test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach } from 'vitest';
import type { ServerState } from '../../../../src/daemon/daemon.js';
import {
  ProcessSupervisor,
  type ProcessLogger,
  type ProcessSupervisorOptions,
  type SupervisedServer,
} from '../../../../src/daemon/local/process/supervisor.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
export const ECHO_SERVER = path.join(ROOT, 'test/fixtures/echo-server.mjs');
export const HOST = path.join(ROOT, 'test/fixtures/supervisor-host.ts');
export const ECHO_STARTUP = `node ${JSON.stringify(ECHO_SERVER)}`;
/** A server that shrugs off SIGTERM: only SIGKILL ends it. */
export const IGNORES_TERM = `trap '' TERM; echo stubborn; while :; do sleep 1; done`;
/** A server that does not read its console (so it outlives a dead supervisor) and saves on SIGTERM. */
export const HANDLES_TERM = `node -e '${[
  'process.on("SIGTERM", () => { console.log("SIGTERM received"); setTimeout(() => { console.log("saved"); process.exit(0); }, 150); });',
  'setInterval(() => {}, 1000);',
  'console.log("up");',
].join(' ')}'`;

export interface LogEntry {
  level: 'info' | 'warn' | 'error';
  obj: Record<string, unknown>;
  msg: string;
}

/** A logger that keeps what it is told, so tests can see how a process exited. */
export function recordingLogger(): ProcessLogger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const record = (level: LogEntry['level']) => (obj: object, msg: string) =>
    entries.push({ level, obj: obj as Record<string, unknown>, msg });
  return { entries, info: record('info'), warn: record('warn'), error: record('error') };
}

/** Polls `check` until it holds; fails with `what` after `timeoutMs`. */
export async function waitFor(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Whether a pid names a live process (a zombie awaiting its reaper counts as gone). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no procfs: kill(0) is all we know
  }
}

/** Another service instance: a supervisor in its own Node process (test/fixtures/supervisor-host.ts) running one server. */
export interface Host {
  /** The host process's pid: the owner its pid file names. */
  readonly pid: number;
  /** The server's pid (its process group id). */
  readonly serverPid: number;
  /** The states its own supervisor reported, in order. */
  readonly events: ServerState[];
  /** What the host's supervisor says the server's state is. */
  state(): Promise<ServerState>;
  /** SIGKILLs the host (its server is left running, an orphan) and waits for it to be gone. */
  crash(): Promise<void>;
}

/** Starts a host that starts `target`; resolves once the server runs there. */
export async function startHost(
  target: SupervisedServer,
  options: ProcessSupervisorOptions,
  hosts: ChildProcess[],
): Promise<Host> {
  const child = spawn(process.execPath, ['--import', 'tsx', HOST, JSON.stringify(options), JSON.stringify(target)], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  hosts.push(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const messages: Array<Record<string, unknown>> = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      messages.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // not ours
    }
  });
  const started = () => messages.find((m) => 'started' in m);
  await waitFor(() => started() !== undefined || child.exitCode !== null, 'the host to start its server', 15_000);
  const serverPid = started()?.started;
  if (typeof serverPid !== 'number') throw new Error(`the host did not start its server: ${JSON.stringify(messages)}`);
  return {
    pid: child.pid!,
    serverPid,
    get events() {
      return messages.flatMap((m) => (typeof m.event === 'string' ? [m.event as ServerState] : []));
    },
    async state() {
      const asked = messages.length;
      child.stdin.write('state\n');
      await waitFor(() => messages.slice(asked).some((m) => 'state' in m), 'the host to answer');
      return messages.slice(asked).find((m) => 'state' in m)!.state as ServerState;
    },
    async crash() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * Runs a supervisor in a separate Node process, starts `target` there, then
 * SIGKILLs that process: a service that crashed and left its server running.
 * Resolves with the orphaned server's pid.
 */
export async function crashedServiceLeaving(
  target: SupervisedServer,
  dirs: ProcessSupervisorOptions,
  hosts: ChildProcess[],
): Promise<number> {
  const host = await startHost(target, dirs, hosts);
  await host.crash();
  return host.serverPid;
}

/**
 * Live processes of a server (found by the P_SERVER_UUID they were given):
 * each copy of it is a process group of its own, so `leaders` counts copies.
 */
export function processesOf(serverUuid: string, which: 'leaders' | 'node'): number[] {
  return fs.readdirSync('/proc').flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return [];
    const pid = Number(entry);
    try {
      if (!fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`P_SERVER_UUID=${serverUuid}`)) return [];
      const matches =
        which === 'leaders'
          ? pgrpOf(pid) === pid
          : path.basename(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '') === 'node';
      return matches && isAlive(pid) ? [pid] : [];
    } catch {
      return []; // gone, or not ours to read
    }
  });
}

export function pgrpOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[5 - 3]);
}

/** Field 22 of /proc/<pid>/stat. */
export function startTimeOf(pid: number): string {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[22 - 3]!;
}

export const HAS_PROCFS = fs.existsSync('/proc/self/stat');

/**
 * Each test's own volume, log and run folders, and everything it started:
 * supervisors are shut down, other instances and their servers killed, and
 * the folders removed after the test, whatever happened in it.
 */
export class SupervisorSandbox {
  dir = '';
  volumeDir = '';
  logDir = '';
  runDir = '';
  /** Process groups to SIGKILL after the test: servers that outlive the supervisor that started them. */
  strayPids: number[] = [];
  /** Other service instances (test/fixtures/supervisor-host.ts). */
  hosts: ChildProcess[] = [];
  private supervisors: ProcessSupervisor[] = [];

  setUp(): void {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-proc-'));
    this.volumeDir = path.join(this.dir, 'volume');
    this.logDir = path.join(this.dir, 'logs');
    this.runDir = path.join(this.dir, 'run');
    fs.mkdirSync(this.volumeDir);
    this.supervisors = [];
    this.strayPids = [];
    this.hosts = [];
  }

  async tearDown(): Promise<void> {
    // Hosts first, killed outright: their servers are in strayPids.
    await Promise.all(
      this.hosts.map(async (host) => {
        if (host.exitCode !== null || host.signalCode !== null) return;
        const exited = new Promise((resolve) => host.once('exit', resolve));
        host.kill('SIGKILL');
        await exited;
      }),
    );
    await Promise.all(this.supervisors.map((s) => s.shutdownAll()));
    for (const pid of this.strayPids) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  supervisor = (options: Partial<ProcessSupervisorOptions> = {}) => {
    const logger = recordingLogger();
    const s = new ProcessSupervisor({ logDir: this.logDir, runDir: this.runDir, stopGraceMs: 10_000, logger, ...options });
    this.supervisors.push(s);
    const states: ServerState[] = [];
    s.onStateChange((_uuid, state) => states.push(state));
    return { s, logger, states };
  };

  /** Another instance, in its own process, running `target`; its server is killed after the test whatever happens. */
  host = async (target: SupervisedServer, options: Partial<ProcessSupervisorOptions> = {}): Promise<Host> => {
    const h = await startHost(target, { logDir: this.logDir, runDir: this.runDir, stopGraceMs: 10_000, ...options }, this.hosts);
    this.strayPids.push(h.serverPid);
    return h;
  };

  server = (overrides: Partial<SupervisedServer> = {}): SupervisedServer => {
    return { uuid: randomUUID(), startup: ECHO_STARTUP, stopCommand: 'stop', volumeDir: this.volumeDir, ...overrides };
  };

  logOf = (uuid: string) => {
    try {
      return fs.readFileSync(path.join(this.logDir, `${uuid}.log`), 'utf8');
    } catch {
      return '';
    }
  };

  pidFileOf = (uuid: string) => path.join(this.runDir, `${uuid}.pid`);

  exitOf = (logger: { entries: LogEntry[] }, pid: number) =>
    logger.entries.find((e) => e.msg === 'server process exited' && e.obj.pid === pid)?.obj;
}

/** A sandbox set up before and torn down after each test of the calling suite. */
export function useSupervisorSandbox(): SupervisorSandbox {
  const sandbox = new SupervisorSandbox();
  beforeEach(() => sandbox.setUp());
  afterEach(() => sandbox.tearDown());
  return sandbox;
}
