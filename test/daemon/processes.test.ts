import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ServerState } from '../../src/daemon/daemon.js';
import {
  NoStartupCommandError,
  ProcessSupervisor,
  ServerNotRunningError,
  type ProcessLogger,
  type ProcessSupervisorOptions,
  type SupervisedServer,
} from '../../src/daemon/local/processes.js';

/**
 * The local daemon's process supervisor against real child processes: the
 * echo fixture (a stand-in game server) and a few shell one-liners. Other
 * service instances sharing the run folder are supervisors in other Node
 * processes (test/fixtures/supervisor-host.ts).
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ECHO_SERVER = path.join(ROOT, 'test/fixtures/echo-server.mjs');
const HOST = path.join(ROOT, 'test/fixtures/supervisor-host.ts');
const ECHO_STARTUP = `node ${JSON.stringify(ECHO_SERVER)}`;
/** A server that shrugs off SIGTERM: only SIGKILL ends it. */
const IGNORES_TERM = `trap '' TERM; echo stubborn; while :; do sleep 1; done`;
/** A server that does not read its console (so it outlives a dead supervisor) and saves on SIGTERM. */
const HANDLES_TERM = `node -e '${[
  'process.on("SIGTERM", () => { console.log("SIGTERM received"); setTimeout(() => { console.log("saved"); process.exit(0); }, 150); });',
  'setInterval(() => {}, 1000);',
  'console.log("up");',
].join(' ')}'`;

interface LogEntry {
  level: 'info' | 'warn' | 'error';
  obj: Record<string, unknown>;
  msg: string;
}

/** A logger that keeps what it is told, so tests can see how a process exited. */
function recordingLogger(): ProcessLogger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const record = (level: LogEntry['level']) => (obj: object, msg: string) =>
    entries.push({ level, obj: obj as Record<string, unknown>, msg });
  return { entries, info: record('info'), warn: record('warn'), error: record('error') };
}

/** Polls `check` until it holds; fails with `what` after `timeoutMs`. */
async function waitFor(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Whether a pid names a live process (a zombie awaiting its reaper counts as gone). */
function isAlive(pid: number): boolean {
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
interface Host {
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
async function startHost(
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
async function crashedServiceLeaving(target: SupervisedServer, dirs: ProcessSupervisorOptions, hosts: ChildProcess[]): Promise<number> {
  const host = await startHost(target, dirs, hosts);
  await host.crash();
  return host.serverPid;
}

/**
 * Live processes of a server (found by the P_SERVER_UUID they were given):
 * each copy of it is a process group of its own, so `leaders` counts copies.
 */
function processesOf(serverUuid: string, which: 'leaders' | 'node'): number[] {
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

function pgrpOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[5 - 3]);
}

/** Field 22 of /proc/<pid>/stat. */
function startTimeOf(pid: number): string {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[22 - 3]!;
}

const HAS_PROCFS = fs.existsSync('/proc/self/stat');

describe('ProcessSupervisor', () => {
  let dir: string;
  let volumeDir: string;
  let logDir: string;
  let runDir: string;
  let supervisors: ProcessSupervisor[];
  let strayPids: number[];
  let hosts: ChildProcess[];

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-proc-'));
    volumeDir = path.join(dir, 'volume');
    logDir = path.join(dir, 'logs');
    runDir = path.join(dir, 'run');
    fs.mkdirSync(volumeDir);
    supervisors = [];
    strayPids = [];
    hosts = [];
  });

  afterEach(async () => {
    // Hosts first, killed outright: their servers are in strayPids.
    await Promise.all(
      hosts.map(async (host) => {
        if (host.exitCode !== null || host.signalCode !== null) return;
        const exited = new Promise((resolve) => host.once('exit', resolve));
        host.kill('SIGKILL');
        await exited;
      }),
    );
    await Promise.all(supervisors.map((s) => s.shutdownAll()));
    for (const pid of strayPids) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function supervisor(options: Partial<ProcessSupervisorOptions> = {}) {
    const logger = recordingLogger();
    const s = new ProcessSupervisor({ logDir, runDir, stopGraceMs: 10_000, logger, ...options });
    supervisors.push(s);
    const states: ServerState[] = [];
    s.onStateChange((_uuid, state) => states.push(state));
    return { s, logger, states };
  }

  /** Another instance, in its own process, running `target`; its server is killed after the test whatever happens. */
  async function host(target: SupervisedServer, options: Partial<ProcessSupervisorOptions> = {}): Promise<Host> {
    const h = await startHost(target, { logDir, runDir, stopGraceMs: 10_000, ...options }, hosts);
    strayPids.push(h.serverPid);
    return h;
  }

  function server(overrides: Partial<SupervisedServer> = {}): SupervisedServer {
    return { uuid: randomUUID(), startup: ECHO_STARTUP, stopCommand: 'stop', volumeDir, ...overrides };
  }

  const logOf = (uuid: string) => {
    try {
      return fs.readFileSync(path.join(logDir, `${uuid}.log`), 'utf8');
    } catch {
      return '';
    }
  };
  const pidFileOf = (uuid: string) => path.join(runDir, `${uuid}.pid`);
  const exitOf = (logger: { entries: LogEntry[] }, pid: number) =>
    logger.entries.find((e) => e.msg === 'server process exited' && e.obj.pid === pid)?.obj;

  it('starts a process in the volume folder: starting, then running; its output goes to the log; a pid file records it', async () => {
    const { s, states } = supervisor();
    const target = server({ startup: `pwd; ${ECHO_STARTUP}` });
    await s.start(target);

    expect(s.state(target.uuid)).toBe('running');
    expect(states).toEqual(['starting', 'running']);
    await waitFor(() => logOf(target.uuid).includes('ready'), 'ready line');
    expect(logOf(target.uuid)).toContain(fs.realpathSync(volumeDir));
    const pid = s.pid(target.uuid)!;
    expect(isAlive(pid)).toBe(true);
    const record = JSON.parse(fs.readFileSync(pidFileOf(target.uuid), 'utf8')) as {
      pid: number;
      pgid: number;
      startTime: string | null;
      owner: { pid: number; startTime: string | null; bootId: string | null };
    };
    expect(record).toMatchObject({ pid, pgid: pid, owner: { pid: process.pid } });
    if (HAS_PROCFS) {
      expect(record.startTime).toMatch(/^\d+$/);
      expect(record.owner.startTime).toBe(startTimeOf(process.pid));
      expect(record.owner.bootId).toBe(fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
    }
  });

  it('appends to the log across runs instead of truncating it', async () => {
    const { s } = supervisor();
    const target = server();
    await s.start(target);
    await waitFor(() => logOf(target.uuid).includes('ready'), 'first ready');
    await s.restart(target);
    await waitFor(() => logOf(target.uuid).match(/ready/g)?.length === 2, 'second ready');
    expect(logOf(target.uuid)).toMatch(/^ready\nstopping\nready\n$/);
  });

  it('writes console lines to standard input; the echo shows up in the log', async () => {
    const { s } = supervisor();
    const target = server();
    await s.start(target);
    await s.sendCommand(target.uuid, 'say hello');
    await s.sendCommand(target.uuid, 'say again');
    await waitFor(() => logOf(target.uuid).includes('> say again'), 'echo of the second line');
    expect(logOf(target.uuid)).toBe('ready\n> say hello\n> say again\n');
  });

  it('stops with the stop command: stopping, then offline once it exited by itself; the pid file is removed', async () => {
    const { s, states, logger } = supervisor();
    const target = server();
    await s.start(target);
    const pid = s.pid(target.uuid)!;
    const stopping = s.stop(target);
    await waitFor(() => s.state(target.uuid) === 'stopping', 'stopping');
    await stopping;

    expect(s.state(target.uuid)).toBe('offline');
    expect(states).toEqual(['starting', 'running', 'stopping', 'offline']);
    expect(logOf(target.uuid)).toContain('stopping\n');
    expect(exitOf(logger, pid)).toMatchObject({ code: 0, signal: null });
    expect(isAlive(pid)).toBe(false);
    expect(fs.existsSync(pidFileOf(target.uuid))).toBe(false);
    expect(logger.entries.some((e) => e.level === 'warn')).toBe(false);
  });

  it('stops with SIGTERM to the process group when there is no stop command, waiting for the server to finish, not just the shell', async () => {
    const { s, logger } = supervisor();
    const target = server({ stopCommand: null });
    await s.start(target);
    await waitFor(() => logOf(target.uuid).includes('ready'), 'ready line');
    const started = Date.now();
    await s.stop(target);

    expect(s.state(target.uuid)).toBe('offline');
    // /bin/sh dies of the SIGTERM at once; the server itself still saves before it exits.
    expect(logOf(target.uuid)).toContain('SIGTERM received\nsaved\n');
    expect(Date.now() - started).toBeLessThan(5_000); // not the 10 s grace period
    expect(logger.entries.some((e) => e.msg.includes('did not stop in time'))).toBe(false);
  });

  it("treats Pterodactyl's ^C stop command as SIGINT", async () => {
    const { s } = supervisor();
    const target = server({ stopCommand: '^C' });
    await s.start(target);
    await waitFor(() => logOf(target.uuid).includes('ready'), 'ready line');
    await s.stop(target);
    expect(logOf(target.uuid)).toContain('SIGINT received');
  });

  it('SIGKILLs the whole group when the process ignores its stop request for the grace period', async () => {
    const { s, logger } = supervisor({ stopGraceMs: 300 });
    const target = server({ startup: IGNORES_TERM, stopCommand: null });
    await s.start(target);
    await waitFor(() => logOf(target.uuid).includes('stubborn'), 'the trap to be set');
    const pid = s.pid(target.uuid)!;
    const started = Date.now();
    await s.stop(target);

    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(s.state(target.uuid)).toBe('offline');
    expect(exitOf(logger, pid)).toMatchObject({ signal: 'SIGKILL' });
    expect(logger.entries.some((e) => e.level === 'warn' && e.msg.includes('did not stop in time'))).toBe(true);
  });

  it('also SIGKILLs a process that ignores its stop command', async () => {
    const { s, logger } = supervisor({ stopGraceMs: 300 });
    const target = server({ startup: IGNORES_TERM, stopCommand: 'quit' });
    await s.start(target);
    const pid = s.pid(target.uuid)!;
    await s.stop(target);
    expect(exitOf(logger, pid)).toMatchObject({ signal: 'SIGKILL' });
  });

  it('kills at once, and a kill does not wait behind a hanging stop', async () => {
    const { s, states, logger } = supervisor({ stopGraceMs: 20_000 });
    const target = server({ startup: IGNORES_TERM, stopCommand: null });
    await s.start(target);
    await waitFor(() => logOf(target.uuid).includes('stubborn'), 'the trap to be set');
    const pid = s.pid(target.uuid)!;
    const stopping = s.stop(target);
    await waitFor(() => s.state(target.uuid) === 'stopping', 'stopping');

    const started = Date.now();
    await s.kill(target);
    await stopping;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(s.state(target.uuid)).toBe('offline');
    expect(states).toEqual(['starting', 'running', 'stopping', 'offline']);
    expect(exitOf(logger, pid)).toMatchObject({ signal: 'SIGKILL' });
  });

  it('kills a running process: offline, exited by SIGKILL', async () => {
    const { s, logger } = supervisor();
    const target = server();
    await s.start(target);
    const pid = s.pid(target.uuid)!;
    await s.kill(target);
    expect(s.state(target.uuid)).toBe('offline');
    expect(exitOf(logger, pid)).toMatchObject({ signal: 'SIGKILL' });
    expect(isAlive(pid)).toBe(false);
  });

  it('kills what the startup command forked along with it', async () => {
    const { s } = supervisor();
    // The shell backgrounds a sleeper and prints its pid, then runs the echo server.
    const target = server({ startup: `sleep 60 & echo "child $!"; ${ECHO_STARTUP}` });
    await s.start(target);
    await waitFor(() => /child \d+/.test(logOf(target.uuid)), 'the child pid');
    const childPid = Number(/child (\d+)/.exec(logOf(target.uuid))![1]);
    expect(isAlive(childPid)).toBe(true);
    await s.kill(target);
    await waitFor(() => !isAlive(childPid), 'the forked child to die');
  });

  it('restarts: the old process stops, a new one runs', async () => {
    const { s, states } = supervisor();
    const target = server();
    await s.start(target);
    const first = s.pid(target.uuid)!;
    await s.restart(target);
    const second = s.pid(target.uuid)!;

    expect(second).not.toBe(first);
    expect(isAlive(first)).toBe(false);
    expect(s.state(target.uuid)).toBe('running');
    expect(states).toEqual(['starting', 'running', 'stopping', 'offline', 'starting', 'running']);
    expect(JSON.parse(fs.readFileSync(pidFileOf(target.uuid), 'utf8'))).toMatchObject({ pid: second });
  });

  it('restarts an offline server by starting it', async () => {
    const { s } = supervisor();
    const target = server();
    await s.restart(target);
    expect(s.state(target.uuid)).toBe('running');
  });

  it('notices a process that exits by itself: offline, listeners told, pid file removed', async () => {
    const { s, logger } = supervisor();
    const seen: Array<[string, ServerState]> = [];
    s.onStateChange((uuid, state) => seen.push([uuid, state]));
    const target = server({ startup: 'echo bye; exit 3' });
    await s.start(target);
    // It may be gone already; the supervisor logged its pid when it started.
    const pid = logger.entries.find((e) => e.msg === 'server process started' && e.obj.serverUuid === target.uuid)?.obj.pid;
    await waitFor(() => s.state(target.uuid) === 'offline', 'the process to exit');

    expect(seen).toEqual([
      [target.uuid, 'starting'],
      [target.uuid, 'running'],
      [target.uuid, 'offline'],
    ]);
    expect(logOf(target.uuid)).toBe('bye\n');
    expect(exitOf(logger, pid as number)).toMatchObject({ code: 3, signal: null });
    await waitFor(() => !fs.existsSync(pidFileOf(target.uuid)), 'the pid file to go');
    // Startable again.
    await s.start({ ...target, startup: ECHO_STARTUP });
    expect(s.state(target.uuid)).toBe('running');
  });

  it('refuses console lines when the server is not running', async () => {
    const { s } = supervisor();
    const target = server();
    await expect(s.sendCommand(target.uuid, 'hello')).rejects.toBeInstanceOf(ServerNotRunningError);
    await s.start(target);
    await s.stop(target);
    await expect(s.sendCommand(target.uuid, 'hello')).rejects.toBeInstanceOf(ServerNotRunningError);
  });

  it('refuses to start a server without a startup command, staying offline', async () => {
    const { s, states } = supervisor();
    const target = server({ startup: null });
    await expect(s.start(target)).rejects.toBeInstanceOf(NoStartupCommandError);
    await expect(s.restart(target)).rejects.toBeInstanceOf(NoStartupCommandError);
    expect(s.state(target.uuid)).toBe('offline');
    expect(states).toEqual([]);
  });

  it('fails a start with a clear message when the volume folder is missing, staying offline', async () => {
    const { s, states } = supervisor();
    const target = server({ volumeDir: path.join(dir, 'no-such-volume') });
    await expect(s.start(target)).rejects.toThrow(/volume folder .*no-such-volume does not exist/);
    expect(s.state(target.uuid)).toBe('offline');
    expect(states).toEqual([]);
  });

  it('makes stop and kill of an offline server no-ops, and start of a running one', async () => {
    const { s, states } = supervisor();
    const target = server();
    await s.stop(target);
    await s.kill(target);
    expect(states).toEqual([]);
    await s.start(target);
    const pid = s.pid(target.uuid);
    await s.start(target);
    expect(s.pid(target.uuid)).toBe(pid);
    expect(states).toEqual(['starting', 'running']);
  });

  it('serialises concurrent power actions: three starts spawn one process', async () => {
    const { s, states } = supervisor();
    const target = server();
    await Promise.all([s.start(target), s.start(target), s.start(target)]);
    expect(states).toEqual(['starting', 'running']);
    await s.sendCommand(target.uuid, 'marker');
    await waitFor(() => logOf(target.uuid).includes('> marker'), 'marker echo');
    expect(logOf(target.uuid).match(/ready/g)).toHaveLength(1);
  });

  it('serialises start, stop, start in the order asked', async () => {
    const { s, states } = supervisor();
    const target = server();
    await Promise.all([s.start(target), s.stop(target), s.start(target)]);
    expect(states).toEqual(['starting', 'running', 'stopping', 'offline', 'starting', 'running']);
    expect(s.state(target.uuid)).toBe('running');
  });

  it('keeps going when a listener throws, and stops telling an unsubscribed one', async () => {
    const { s, logger } = supervisor();
    const unsubscribe = s.onStateChange(() => {
      throw new Error('listener bug');
    });
    const late: ServerState[] = [];
    const stopListening = s.onStateChange((_uuid, state) => late.push(state));
    const target = server();
    await s.start(target);
    stopListening();
    await s.stop(target);
    unsubscribe();

    expect(s.state(target.uuid)).toBe('offline');
    expect(late).toEqual(['starting', 'running']);
    expect(logger.entries.filter((e) => e.msg === 'a server state listener failed')).toHaveLength(4);
  });

  it('reaps a server process left running by a service that crashed: SIGTERM first, and it may save', async () => {
    const target = server({ startup: HANDLES_TERM, stopCommand: null });
    const pid = await crashedServiceLeaving(target, { logDir, runDir }, hosts);
    strayPids.push(pid);
    await waitFor(() => logOf(target.uuid).includes('up'), 'the orphan to be up');
    expect(isAlive(pid)).toBe(true);
    expect(fs.existsSync(pidFileOf(target.uuid))).toBe(true);

    const { s: next, logger } = supervisor({ stopGraceMs: 2_000 });
    // Until it is reaped, the orphan is what runs on that volume.
    expect(next.state(target.uuid)).toBe('running');
    await next.reapOrphans();

    expect(isAlive(pid)).toBe(false);
    expect(logOf(target.uuid)).toContain('SIGTERM received\nsaved\n');
    expect(fs.existsSync(pidFileOf(target.uuid))).toBe(false);
    expect(logger.entries.some((e) => e.msg.includes('left behind') && e.obj.pid === pid)).toBe(true);
    // The new supervisor can start the server again.
    await next.start({ ...target, startup: ECHO_STARTUP });
    expect(next.state(target.uuid)).toBe('running');
  });

  it('SIGKILLs an orphan that ignores SIGTERM', async () => {
    const target = server({ startup: IGNORES_TERM, stopCommand: null });
    const pid = await crashedServiceLeaving(target, { logDir, runDir }, hosts);
    strayPids.push(pid);
    await waitFor(() => logOf(target.uuid).includes('stubborn'), 'the trap to be set');

    const { s: next } = supervisor({ stopGraceMs: 300 });
    const started = Date.now();
    await next.reapOrphans();
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(isAlive(pid)).toBe(false);
    expect(fs.existsSync(pidFileOf(target.uuid))).toBe(false);
  });

  it('leaves alone what another supervisor in this (live) process runs', async () => {
    const { s: other } = supervisor();
    const target = server();
    await other.start(target);
    await waitFor(() => logOf(target.uuid).includes('ready'), 'ready line');
    const pid = other.pid(target.uuid)!;
    const pidFile = fs.readFileSync(pidFileOf(target.uuid), 'utf8');

    const { s: next } = supervisor({ stopGraceMs: 300 });
    await next.reapOrphans();
    expect(isAlive(pid)).toBe(true);
    expect(fs.readFileSync(pidFileOf(target.uuid), 'utf8')).toBe(pidFile);
    expect(next.state(target.uuid)).toBe('running');
    expect(other.state(target.uuid)).toBe('running');
  });

  it.skipIf(!fs.existsSync('/proc/self/stat'))('leaves alone a process whose pid was recycled (other start time)', async () => {
    const stranger = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const pid = stranger.pid!;
    strayPids.push(pid);
    const uuid = randomUUID();
    fs.mkdirSync(runDir, { recursive: true });
    fs.writeFileSync(pidFileOf(uuid), JSON.stringify({ pid, pgid: pid, startTime: '1', command: 'x', startedAt: '' }));

    const { s } = supervisor({ stopGraceMs: 300 });
    await s.reapOrphans();
    expect(isAlive(pid)).toBe(true);
    expect(fs.existsSync(pidFileOf(uuid))).toBe(false);
  });

  it('removes stale and unreadable pid files, and copes without a run folder', async () => {
    const { s } = supervisor();
    await s.reapOrphans(); // no run folder yet
    fs.mkdirSync(runDir, { recursive: true });
    const dead = spawn('true');
    await new Promise((resolve) => dead.once('exit', resolve));
    const stale = randomUUID();
    const garbled = randomUUID();
    fs.writeFileSync(
      pidFileOf(stale),
      JSON.stringify({ pid: dead.pid, pgid: dead.pid, startTime: null, command: 'true', startedAt: '' }),
    );
    fs.writeFileSync(pidFileOf(garbled), '{"pid": 1, "pgid": 1');
    fs.writeFileSync(path.join(runDir, 'unrelated.txt'), 'kept');

    await s.reapOrphans();
    expect(fs.readdirSync(runDir)).toEqual(['unrelated.txt']);
  });

  it('reaps a process recorded only in a pid file that a crash left before its rename', async () => {
    const orphan = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const pid = orphan.pid!;
    strayPids.push(pid);
    const exited = new Promise((resolve) => orphan.once('exit', resolve));
    fs.mkdirSync(runDir, { recursive: true });
    const file = `${pidFileOf(randomUUID())}.tmp`;
    fs.writeFileSync(file, JSON.stringify({ pid, pgid: pid, startTime: null, command: 'sleep 30', startedAt: '' }));

    const { s } = supervisor({ stopGraceMs: 300 });
    await s.reapOrphans();
    await exited;
    expect(fs.existsSync(file)).toBe(false);
  });

  it('never signals group 1 or 0, whatever a pid file says', async () => {
    fs.mkdirSync(runDir, { recursive: true });
    const uuid = randomUUID();
    fs.writeFileSync(pidFileOf(uuid), JSON.stringify({ pid: 1, pgid: 1, startTime: null, command: 'x', startedAt: '' }));
    const { s } = supervisor();
    await s.reapOrphans();
    expect(fs.existsSync(pidFileOf(uuid))).toBe(false);
    expect(isAlive(process.pid)).toBe(true);
  });

  describe.skipIf(!HAS_PROCFS)('several instances sharing one run folder', () => {
    it('leaves alone, sees and drives a server another live instance runs: reap, state, start, console, stop', async () => {
      const target = server();
      const a = await host(target);
      const pid = a.serverPid;
      await waitFor(() => logOf(target.uuid).includes('ready'), 'ready line');
      const pidFile = fs.readFileSync(pidFileOf(target.uuid), 'utf8');
      expect(JSON.parse(pidFile)).toMatchObject({ pid, owner: { pid: a.pid, startTime: startTimeOf(a.pid) } });

      const { s: b, states, logger } = supervisor();
      await b.reapOrphans();
      expect(isAlive(pid)).toBe(true);
      expect(fs.readFileSync(pidFileOf(target.uuid), 'utf8')).toBe(pidFile);
      expect(b.state(target.uuid)).toBe('running');
      expect(b.pid(target.uuid)).toBe(pid);

      // Not a second copy on the same volume.
      await b.start(target);
      expect(fs.readFileSync(pidFileOf(target.uuid), 'utf8')).toBe(pidFile);
      expect(processesOf(target.uuid, 'leaders')).toEqual([pid]);
      expect(b.pid(target.uuid)).toBe(pid);

      // Console lines reach it through its standard input; its owner's own lines still do too.
      await b.sendCommand(target.uuid, 'hello from B');
      await waitFor(() => logOf(target.uuid).includes('> hello from B'), 'the echo of B\'s line');
      expect(processesOf(target.uuid, 'node')).toHaveLength(1);
      expect(logOf(target.uuid).match(/ready/g)).toHaveLength(1);
      expect(await a.state()).toBe('running');

      await b.stop(target);
      expect(logOf(target.uuid)).toMatch(/> hello from B\nstopping\n$/); // the stop command, through the console
      expect(isAlive(pid)).toBe(false);
      expect(b.state(target.uuid)).toBe('offline');
      expect(states).toEqual(['stopping', 'offline']);
      await waitFor(() => a.events.includes('offline'), 'the owner to see it exit');
      expect(a.events).toEqual(['starting', 'running', 'offline']);
      expect(await a.state()).toBe('offline');
      await waitFor(() => !fs.existsSync(pidFileOf(target.uuid)), 'the owner to remove its pid file');
      expect(logger.entries.filter((e) => e.level !== 'info')).toEqual([]);
      await expect(b.sendCommand(target.uuid, 'late')).rejects.toBeInstanceOf(ServerNotRunningError);
    });

    it('restarts a server another instance runs: SIGTERM there (it may save), then it runs here, as both see', async () => {
      const target = server({ stopCommand: null });
      const a = await host(target);
      await waitFor(() => logOf(target.uuid).includes('ready'), 'ready line');
      const { s: b } = supervisor();

      await b.restart(target);
      const pid = b.pid(target.uuid)!;
      strayPids.push(pid);
      expect(pid).not.toBe(a.serverPid);
      expect(isAlive(a.serverPid)).toBe(false);
      // Its shell died of the SIGTERM at once, yet its owner let the server save instead of killing it.
      expect(logOf(target.uuid)).toMatch(/^ready\nSIGTERM received\nsaved\n/);
      expect(a.events).toEqual(['starting', 'running', 'stopping', 'offline']);
      expect(b.state(target.uuid)).toBe('running');
      expect(JSON.parse(fs.readFileSync(pidFileOf(target.uuid), 'utf8'))).toMatchObject({ pid, owner: { pid: process.pid } });
      expect(await a.state()).toBe('running');
      await waitFor(() => logOf(target.uuid).match(/ready/g)?.length === 2, 'the second ready');
    });

    it('kills a server another instance runs, even one that ignores SIGTERM', async () => {
      const target = server({ startup: IGNORES_TERM, stopCommand: null });
      const a = await host(target);
      await waitFor(() => logOf(target.uuid).includes('stubborn'), 'the trap to be set');
      const { s: b, states } = supervisor({ stopGraceMs: 20_000 });

      const started = Date.now();
      await b.kill(target);
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(isAlive(a.serverPid)).toBe(false);
      expect(b.state(target.uuid)).toBe('offline');
      expect(states).toEqual(['stopping', 'offline']);
      await waitFor(() => a.events.includes('offline'), 'the owner to see it exit');
    });

    it('kills a server another instance runs once it ignored its stop command for the grace period', async () => {
      const target = server({ startup: HANDLES_TERM, stopCommand: 'quit' }); // it never reads its console
      const a = await host(target);
      await waitFor(() => logOf(target.uuid).includes('up'), 'the server to be up');
      const { s: b, logger } = supervisor({ stopGraceMs: 300 });

      const started = Date.now();
      await b.stop(target);
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      expect(isAlive(a.serverPid)).toBe(false);
      expect(logOf(target.uuid)).not.toContain('SIGTERM received');
      expect(logger.entries.some((e) => e.level === 'warn' && e.msg.includes('did not stop in time'))).toBe(true);
    });

    it('reaps the server once the instance that ran it has died, and only then', async () => {
      const target = server({ startup: HANDLES_TERM, stopCommand: null });
      const a = await host(target);
      await waitFor(() => logOf(target.uuid).includes('up'), 'the server to be up');
      const { s: b, logger } = supervisor({ stopGraceMs: 2_000 });
      await b.reapOrphans();
      expect(isAlive(a.serverPid)).toBe(true);

      await a.crash();
      expect(isAlive(a.serverPid)).toBe(true);
      // An orphan still runs on that volume: visible, and not started twice.
      expect(b.state(target.uuid)).toBe('running');
      await b.start(target);
      expect(processesOf(target.uuid, 'leaders')).toEqual([a.serverPid]);

      await b.reapOrphans();
      expect(isAlive(a.serverPid)).toBe(false);
      expect(logOf(target.uuid)).toContain('SIGTERM received\nsaved\n');
      expect(fs.existsSync(pidFileOf(target.uuid))).toBe(false);
      expect(logger.entries.some((e) => e.msg.includes('left behind') && e.obj.ownerPid === a.pid)).toBe(true);
      expect(b.state(target.uuid)).toBe('offline');
    });

    it('spawns one process when two supervisors start the same server at once', async () => {
      const { s: b } = supervisor();
      const { s: c } = supervisor();
      const target = server();
      await Promise.all([b.start(target), c.start(target), b.start(target), c.start(target)]);
      const owners = [b, c].filter((s) => s.pid(target.uuid) !== undefined && s.state(target.uuid) === 'running');
      expect(owners).toHaveLength(2); // one runs it, the other sees it
      const pid = b.pid(target.uuid)!;
      expect(c.pid(target.uuid)).toBe(pid);
      expect(processesOf(target.uuid, 'leaders')).toEqual([pid]);
      await c.sendCommand(target.uuid, 'marker');
      await waitFor(() => logOf(target.uuid).includes('> marker'), 'the marker echo');
      expect(logOf(target.uuid).match(/ready/g)).toHaveLength(1);
    });

    it('sees a claim as starting while its owner lives, and replaces it once the owner is dead', async () => {
      fs.mkdirSync(runDir, { recursive: true });
      const target = server();
      const claim = (ownerPid: number) =>
        JSON.stringify({ pid: null, pgid: null, startTime: null, command: 'x', startedAt: '', owner: { pid: ownerPid, startTime: null, bootId: null }, token: 'ab' });
      fs.writeFileSync(pidFileOf(target.uuid), claim(process.pid));
      const { s } = supervisor();
      expect(s.state(target.uuid)).toBe('starting');
      await s.start(target); // someone else is starting it
      expect(s.pid(target.uuid)).toBeUndefined();
      await s.reapOrphans();
      expect(fs.readFileSync(pidFileOf(target.uuid), 'utf8')).toBe(claim(process.pid));

      const dead = spawn('true');
      await new Promise((resolve) => dead.once('exit', resolve));
      fs.writeFileSync(pidFileOf(target.uuid), claim(dead.pid!));
      expect(s.state(target.uuid)).toBe('offline');
      await s.start(target);
      expect(s.state(target.uuid)).toBe('running');
      expect(JSON.parse(fs.readFileSync(pidFileOf(target.uuid), 'utf8'))).toMatchObject({ pid: s.pid(target.uuid), owner: { pid: process.pid } });
    });

    it('refuses console lines for a foreign process whose standard input is not a pipe', async () => {
      const stranger = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
      const pid = stranger.pid!;
      strayPids.push(pid);
      const exited = new Promise((resolve) => stranger.once('exit', resolve));
      fs.mkdirSync(runDir, { recursive: true });
      const target = server();
      const record = { pid, pgid: pid, startTime: startTimeOf(pid), command: 'sleep 30', startedAt: '', owner: { pid: process.pid, startTime: null, bootId: null }, token: 'cd' };
      fs.writeFileSync(pidFileOf(target.uuid), JSON.stringify(record));

      const { s, logger } = supervisor({ stopGraceMs: 300 });
      expect(s.state(target.uuid)).toBe('running');
      await expect(s.sendCommand(target.uuid, 'hello')).rejects.toBeInstanceOf(ServerNotRunningError);
      expect(logger.entries.some((e) => e.obj.err instanceof Error && /not a pipe/.test(e.obj.err.message))).toBe(true);
      // Its stop command cannot be delivered: SIGTERM instead, and sleep obeys.
      await s.stop(target);
      await exited;
      expect(s.state(target.uuid)).toBe('offline');
    });
  });

  it('shuts everything down: each process by its own stop procedure, in parallel', async () => {
    const { s, logger } = supervisor({ stopGraceMs: 400 });
    const graceful = server();
    const terminated = server({ stopCommand: null });
    const stubborn = server({ startup: IGNORES_TERM, stopCommand: null });
    await Promise.all([s.start(graceful), s.start(terminated), s.start(stubborn)]);
    await waitFor(() => logOf(stubborn.uuid).includes('stubborn') && logOf(terminated.uuid).includes('ready'), 'all up');
    const pids = [graceful, terminated, stubborn].map((t) => s.pid(t.uuid)!);
    const started = Date.now();
    await s.shutdownAll();

    expect(Date.now() - started).toBeLessThan(3_000); // in parallel: about one grace period
    for (const t of [graceful, terminated, stubborn]) expect(s.state(t.uuid)).toBe('offline');
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
    expect(logOf(graceful.uuid)).toContain('stopping');
    expect(logOf(terminated.uuid)).toContain('SIGTERM received');
    expect(exitOf(logger, pids[2]!)).toMatchObject({ signal: 'SIGKILL' });
    expect(fs.readdirSync(runDir)).toEqual([]);
    await expect(s.start(graceful)).rejects.toThrow(/shutting down/);
  });

  it('shutdownAll waits for a start in flight and stops that process too', async () => {
    const { s } = supervisor();
    const target = server();
    const starting = s.start(target);
    await s.shutdownAll();
    await starting;
    expect(s.state(target.uuid)).toBe('offline');
  });
});
