import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ServerState } from '../daemon.js';

/**
 * The local daemon's process supervisor (SPEC 7): one child process per server
 * with a startup command, run in the server's volume folder, its console on
 * standard input and its output appended to `<logDir>/<uuid>.log`.
 *
 * Each process is started in its own process group (`detached`), so a stop or
 * kill reaches everything the startup command forked, not just the shell. A
 * pid file per process lets the next instance of the service find processes a
 * crashed one left behind (`reapOrphans`).
 */

/** The part of a pino logger the supervisor uses (pino's and Fastify's loggers both fit). */
export interface ProcessLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** What the supervisor needs to know about a server to run it. */
export interface SupervisedServer {
  readonly uuid: string;
  readonly startup: string | null;
  readonly stopCommand: string | null;
  /** The folder the process runs in; it must exist. */
  readonly volumeDir: string;
}

export interface ProcessSupervisorOptions {
  /** Holds `<uuid>.log`: each process's standard output and error, appended. */
  logDir: string;
  /** Holds `<uuid>.pid` for each running process, so a later instance can reap what a crashed one left. */
  runDir: string;
  /** How long a stop waits for the process to exit before it is killed (default 10 s). */
  stopGraceMs?: number;
  logger?: ProcessLogger;
}

export type StateListener = (serverUuid: string, state: ServerState) => void;

/** A console line was sent to a server that has no running process. */
export class ServerNotRunningError extends Error {
  constructor(readonly serverUuid: string) {
    super(`Server ${serverUuid} is not running.`);
    this.name = 'ServerNotRunningError';
  }
}

/** A start was asked of a server created without a startup command (it has a volume but no process). */
export class NoStartupCommandError extends Error {
  constructor(readonly serverUuid: string) {
    super(`Server ${serverUuid} has no startup command.`);
    this.name = 'NoStartupCommandError';
  }
}

const DEFAULT_STOP_GRACE_MS = 10_000;
/** Orphans cannot be sent their stop command (their stdin died with the old service), so they get a short SIGTERM grace only. */
const MAX_REAP_GRACE_MS = 3_000;
/** How long to wait for a SIGKILLed orphan group to vanish before giving up on it. */
const REAP_KILL_WAIT_MS = 2_000;
/** Polls for a process group to end start fast and slow down: each poll may read every /proc/<pid>/stat. */
const POLL_FIRST_MS = 25;
const POLL_MAX_MS = 250;

/**
 * The environment a server process gets: only what a command needs to be found
 * and run. The service's own environment (DATABASE_URL and the like) is none of
 * a game server's business; P_SERVER_UUID is what Pterodactyl's containers set.
 */
const INHERITED_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR'];

type LiveState = Exclude<ServerState, 'offline'>;

interface ManagedProcess {
  readonly target: SupervisedServer;
  readonly child: ChildProcess;
  /** Also the process group id: a detached child is the leader of its own session and group. */
  readonly pid: number;
  state: LiveState;
  /** Settles once the pid file was written (or writing it failed and was logged). */
  readonly recorded: Promise<void>;
  /** Settles once the process exited and its pid file is gone; never rejects. */
  exited: Promise<void>;
  killTimer: NodeJS.Timeout | undefined;
  /** When the group was last SIGKILLed: from then on, waiting for it to vanish is bounded. */
  killedAt: number | undefined;
}

/** The contents of `<runDir>/<uuid>.pid`. */
interface PidRecord {
  pid: number;
  pgid: number;
  /** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot): tells our process from a recycled pid. Null without procfs. */
  startTime: string | null;
  command: string;
  startedAt: string;
}

export class ProcessSupervisor {
  private readonly logDir: string;
  private readonly runDir: string;
  private readonly stopGraceMs: number;
  private readonly log: ProcessLogger;
  private readonly processes = new Map<string, ManagedProcess>();
  /** The tail of each server's chain of power actions; see `serialize`. */
  private readonly queues = new Map<string, Promise<void>>();
  private readonly listeners = new Set<StateListener>();
  private closing = false;

  constructor(options: ProcessSupervisorOptions) {
    this.logDir = options.logDir;
    this.runDir = options.runDir;
    this.stopGraceMs = options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
    this.log = options.logger ?? silentLogger;
  }

  state(serverUuid: string): ServerState {
    return this.processes.get(serverUuid)?.state ?? 'offline';
  }

  /** The running process's pid (also its process group id), for diagnostics. */
  pid(serverUuid: string): number | undefined {
    return this.processes.get(serverUuid)?.pid;
  }

  /** Resolves once the process has spawned; a no-op when it is already running. */
  start(target: SupervisedServer): Promise<void> {
    if (this.closing) return Promise.reject(shuttingDown());
    return this.serialize(target.uuid, () => this.launch(target));
  }

  /** Resolves once the process has exited; a no-op when it is not running. */
  stop(target: SupervisedServer): Promise<void> {
    return this.serialize(target.uuid, () => this.halt(target.uuid, target.stopCommand));
  }

  restart(target: SupervisedServer): Promise<void> {
    if (this.closing) return Promise.reject(shuttingDown());
    return this.serialize(target.uuid, async () => {
      await this.halt(target.uuid, target.stopCommand);
      await this.launch(target);
    });
  }

  /**
   * SIGKILLs the process group and resolves once the process has exited. Not
   * queued behind other power actions: a kill is what one reaches for when a
   * stop hangs, so it must not wait for that stop's grace period.
   */
  async kill(target: SupervisedServer): Promise<void> {
    const proc = this.processes.get(target.uuid);
    if (!proc) return;
    this.setState(proc, 'stopping');
    this.killGroup(proc);
    await proc.exited;
  }

  /** Writes a console line to the process's standard input. */
  async sendCommand(serverUuid: string, line: string): Promise<void> {
    const proc = this.processes.get(serverUuid);
    const stdin = proc?.child.stdin;
    if (!proc || proc.state === 'stopping' || !stdin || !stdin.writable) throw new ServerNotRunningError(serverUuid);
    // Not awaiting the flush: a server that stopped reading its console must not hang the caller.
    stdin.write(`${line}\n`);
  }

  onStateChange(listener: StateListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /**
   * Stops every process (each with its stop command and grace period, all at
   * once) and resolves when all have exited. Starts asked for before are
   * carried out (then stopped); starts asked for afterwards fail.
   */
  async shutdownAll(): Promise<void> {
    this.closing = true;
    // Queued actions count too: a start in flight is waited for, then stopped.
    const uuids = new Set([...this.processes.keys(), ...this.queues.keys()]);
    const results = await Promise.allSettled([...uuids].map((uuid) => this.serialize(uuid, () => this.halt(uuid))));
    const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as unknown);
    if (failures.length > 0) throw new AggregateError(failures, 'Some server processes could not be stopped.');
  }

  /**
   * Call once when the daemon starts, before any start: stops the process
   * groups a previous instance left running (it crashed or was killed) and
   * deletes their pid files, so that afterwards no server process runs that
   * this instance does not know about.
   */
  async reapOrphans(): Promise<void> {
    let names: string[];
    try {
      names = await fs.readdir(this.runDir);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return;
      throw err;
    }
    // `.pid.tmp`: a crash between writing a pid file and renaming it into place; its process may well run.
    const pidFiles = names.flatMap((name) => {
      const match = /^(.+)\.pid(?:\.tmp)?$/.exec(name);
      return match?.[1] ? [{ serverUuid: match[1], file: path.join(this.runDir, name) }] : [];
    });
    await Promise.all(pidFiles.map(({ serverUuid, file }) => this.reapPidFile(serverUuid, file)));
  }

  // ------------------------------------------------------------------ power actions

  /**
   * Runs `work` after every earlier power action on the same server has
   * settled, so that e.g. two concurrent starts spawn one process.
   */
  private serialize<T>(serverUuid: string, work: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(serverUuid) ?? Promise.resolve();
    const result = previous.then(work);
    const tail = result.then(noop, noop);
    this.queues.set(serverUuid, tail);
    void tail.then(() => {
      if (this.queues.get(serverUuid) === tail) this.queues.delete(serverUuid);
    });
    return result;
  }

  private async launch(target: SupervisedServer): Promise<void> {
    if (this.processes.has(target.uuid)) return;
    if (!target.startup) throw new NoStartupCommandError(target.uuid);
    assertSafeUuid(target.uuid);
    await assertDirectory(target.volumeDir, target.uuid);
    await Promise.all([fs.mkdir(this.logDir, { recursive: true }), fs.mkdir(this.runDir, { recursive: true })]);

    const logFile = await fs.open(this.logPath(target.uuid), 'a');
    let child: ChildProcess;
    try {
      child = spawnServerProcess(target, target.startup, logFile.fd);
    } catch (err) {
      await logFile.close();
      throw startFailure(target, err);
    }
    // From here to `track` everything is synchronous, so no 'error' or 'exit' event can be missed.
    const spawned = whenSpawned(child);
    child.on('error', (err) => this.log.error({ err, serverUuid: target.uuid }, 'server process error'));
    child.stdin?.on('error', (err) => this.log.warn({ err, serverUuid: target.uuid }, 'server console write failed'));
    const proc = child.pid === undefined ? undefined : this.track(target, child, child.pid);
    // The child writes to its own copy of the descriptor, straight into the file.
    await logFile.close();

    try {
      await spawned;
    } catch (err) {
      throw startFailure(target, err);
    }
    if (!proc) throw startFailure(target, new Error('the process has no pid'));
    if (proc.state === 'starting' && this.processes.get(target.uuid) === proc) this.setState(proc, 'running');
    this.log.info({ serverUuid: target.uuid, pid: proc.pid }, 'server process started');
    await proc.recorded;
  }

  /** Registers a freshly spawned process: state `starting`, pid file, exit handling. */
  private track(target: SupervisedServer, child: ChildProcess, pid: number): ManagedProcess {
    const proc: ManagedProcess = {
      target,
      child,
      pid,
      state: 'starting',
      recorded: this.writePidFile(target, pid),
      exited: Promise.resolve(),
      killTimer: undefined,
      killedAt: undefined,
    };
    const exit = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.once('exit', (code, signal) => resolve([code, signal])),
    );
    proc.exited = exit.then(([code, signal]) => this.afterExit(proc, code, signal));
    this.processes.set(target.uuid, proc);
    this.emit(target.uuid, 'starting');
    return proc;
  }

  /**
   * Asks the process to stop (stop command, or a signal), SIGKILLs its group
   * after the grace period, and resolves once it has exited. `stopCommand`
   * undefined means the one the process was started with.
   */
  private async halt(serverUuid: string, stopCommand?: string | null): Promise<void> {
    const proc = this.processes.get(serverUuid);
    if (!proc) return;
    this.setState(proc, 'stopping');
    proc.killTimer ??= setTimeout(() => this.killAfterGrace(proc), this.stopGraceMs);
    try {
      this.requestStop(proc, stopCommand === undefined ? proc.target.stopCommand : stopCommand);
    } catch (err) {
      clearTimeout(proc.killTimer);
      proc.killTimer = undefined;
      if (this.processes.get(serverUuid) === proc) this.setState(proc, 'running');
      throw err;
    }
    await proc.exited;
  }

  private requestStop(proc: ManagedProcess, stopCommand: string | null): void {
    const request = stopRequest(stopCommand);
    const stdin = proc.child.stdin;
    if ('line' in request && stdin?.writable) {
      stdin.write(`${request.line}\n`);
      return;
    }
    signalGroup(proc.pid, 'signal' in request ? request.signal : 'SIGTERM');
  }

  /**
   * Waits for the group to have no live member. Unbounded until the group is
   * SIGKILLed (by the grace timer or a kill), then bounded: a process stuck in
   * the kernel must not hold a stop forever.
   */
  private async groupEnded(proc: ManagedProcess): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      if (!(await groupAlive(proc.pid))) return true;
      if (proc.killedAt !== undefined && Date.now() - proc.killedAt > REAP_KILL_WAIT_MS) return false;
      await sleep(pollDelay(attempt));
    }
  }

  private killAfterGrace(proc: ManagedProcess): void {
    this.log.warn(
      { serverUuid: proc.target.uuid, pid: proc.pid, graceMs: this.stopGraceMs },
      'server process did not stop in time; killing it',
    );
    this.killGroup(proc);
  }

  /** SIGKILLs the group; used from timers and exit handling, so it logs instead of throwing. */
  private killGroup(proc: ManagedProcess): void {
    proc.killedAt = Date.now();
    try {
      signalGroup(proc.pid, 'SIGKILL');
    } catch (err) {
      this.log.error({ err, serverUuid: proc.target.uuid, pid: proc.pid }, 'could not kill server process');
    }
  }

  /**
   * Runs once per process when its leader (the shell running the startup
   * command) has exited, whatever made it exit. Never throws.
   *
   * The server is offline only once its whole process group is gone: a stop
   * signal reaches the shell and the server alike, and the shell dies at once
   * while the server may take its time to shut down cleanly (the grace timer
   * still bounds that). A leader that ended by itself is treated like a
   * container's main process: whatever it left running goes with it.
   */
  private async afterExit(proc: ManagedProcess, code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    const serverUuid = proc.target.uuid;
    if (proc.state !== 'stopping' && (await groupAlive(proc.pid))) this.killGroup(proc);
    if (!(await this.groupEnded(proc))) {
      this.log.error({ serverUuid, pgid: proc.pid }, 'server processes are still there after SIGKILL; giving up on them');
    }
    clearTimeout(proc.killTimer);
    if (this.processes.get(serverUuid) === proc) {
      this.processes.delete(serverUuid);
      this.emit(serverUuid, 'offline');
    }
    this.log.info({ serverUuid, pid: proc.pid, code, signal }, 'server process exited');
    await proc.recorded;
    await this.removePidFile(serverUuid, proc.pid);
  }

  // ------------------------------------------------------------------ state events

  private setState(proc: ManagedProcess, state: LiveState): void {
    if (proc.state === state) return;
    proc.state = state;
    this.emit(proc.target.uuid, state);
  }

  /** A listener's failure is logged, never passed on: it must not break a power action. */
  private emit(serverUuid: string, state: ServerState): void {
    for (const listener of [...this.listeners]) {
      try {
        const result: unknown = listener(serverUuid, state);
        if (result instanceof Promise) result.catch((err: unknown) => this.logListenerFailure(err, serverUuid, state));
      } catch (err) {
        this.logListenerFailure(err, serverUuid, state);
      }
    }
  }

  private logListenerFailure(err: unknown, serverUuid: string, state: ServerState): void {
    this.log.error({ err, serverUuid, state }, 'a server state listener failed');
  }

  // ------------------------------------------------------------------ pid files and orphans

  private logPath(serverUuid: string): string {
    return path.join(this.logDir, `${serverUuid}.log`);
  }

  private pidPath(serverUuid: string): string {
    return path.join(this.runDir, `${serverUuid}.pid`);
  }

  /** Written via a temporary file and a rename, so a crash never leaves half a pid file. */
  private async writePidFile(target: SupervisedServer, pid: number): Promise<void> {
    const record: PidRecord = {
      pid,
      pgid: pid,
      startTime: await readStartTime(pid),
      command: target.startup ?? '',
      startedAt: new Date().toISOString(),
    };
    const file = this.pidPath(target.uuid);
    try {
      await fs.writeFile(`${file}.tmp`, `${JSON.stringify(record)}\n`);
      await fs.rename(`${file}.tmp`, file);
    } catch (err) {
      this.log.error(
        { err, serverUuid: target.uuid, pid },
        'could not write the pid file; a crash would leave this process unnoticed',
      );
    }
  }

  /** Only removes the file while it still names `pid`: a newer process of the same server may have replaced it. */
  private async removePidFile(serverUuid: string, pid: number): Promise<void> {
    const record = await readPidFile(this.pidPath(serverUuid));
    if (record?.pid !== pid) return;
    await fs.rm(this.pidPath(serverUuid), { force: true }).catch((err: unknown) => {
      this.log.warn({ err, serverUuid, pid }, 'could not remove the pid file');
    });
  }

  private async reapPidFile(serverUuid: string, file: string): Promise<void> {
    const record = await readPidFile(file);
    if (record && this.processes.get(serverUuid)?.pid === record.pid) return; // ours, started by this instance
    if (!record) {
      this.log.warn({ serverUuid, file }, 'removing an unreadable pid file');
    } else if (await isLeftOver(record)) {
      this.log.warn(
        { serverUuid, pid: record.pid, command: record.command },
        'stopping a server process left behind by a previous run',
      );
      try {
        await terminateGroup(record.pgid, Math.min(this.stopGraceMs, MAX_REAP_GRACE_MS));
      } catch (err) {
        this.log.error({ err, serverUuid, pid: record.pid }, 'could not stop a left-over server process');
        return; // keep the file: the daemon's next start tries again
      }
    }
    await fs.rm(file, { force: true });
  }
}

// ---------------------------------------------------------------------- helpers

const silentLogger: ProcessLogger = { info: noop, warn: noop, error: noop };

function noop(): void {}

/**
 * `/bin/sh -c <startup>` in the volume folder, as the leader of a new process
 * group, with stdin piped and stdout and stderr both going to the (append-mode)
 * log file descriptor. May throw synchronously; usually reports failure as an
 * 'error' event.
 */
function spawnServerProcess(target: SupervisedServer, startup: string, logFd: number): ChildProcess {
  return spawn(startup, {
    shell: true,
    cwd: target.volumeDir,
    detached: true,
    stdio: ['pipe', logFd, logFd],
    env: serverEnvironment(target.uuid),
  });
}

function serverEnvironment(serverUuid: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { P_SERVER_UUID: serverUuid };
  for (const name of INHERITED_ENV) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** Resolves on 'spawn', rejects on an 'error' that comes first. Marked handled: it may be awaited only later. */
function whenSpawned(child: ChildProcess): Promise<void> {
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  spawned.catch(noop);
  return spawned;
}

function shuttingDown(): Error {
  return new Error('The process supervisor is shutting down; no new server processes are started.');
}

function startFailure(target: SupervisedServer, err: unknown): Error {
  const reason = err instanceof Error ? err.message : String(err);
  return new Error(`Could not start server ${target.uuid} (in ${target.volumeDir}): ${reason}`, { cause: err });
}

/** A uuid becomes a file name under logDir and runDir; it must not be able to point elsewhere. */
function assertSafeUuid(serverUuid: string): void {
  if (!/^[A-Za-z0-9_-]+$/.test(serverUuid)) throw new Error(`"${serverUuid}" is not a valid server uuid.`);
}

/** Checked up front because spawn reports a missing cwd as "spawn /bin/sh ENOENT", which points at the wrong thing. */
async function assertDirectory(dir: string, serverUuid: string): Promise<void> {
  const stats = await fs.stat(dir).catch(() => null);
  if (!stats?.isDirectory()) throw new Error(`Could not start server ${serverUuid}: its volume folder ${dir} does not exist.`);
}

/**
 * How a server is asked to stop: no stop command means SIGTERM; Pterodactyl's
 * `^C` means SIGINT (writing "^C" to stdin would do nothing); anything else is
 * a console line.
 */
function stopRequest(stopCommand: string | null): { signal: NodeJS.Signals } | { line: string } {
  if (!stopCommand) return { signal: 'SIGTERM' };
  if (stopCommand.trim().toUpperCase() === '^C') return { signal: 'SIGINT' };
  return { line: stopCommand };
}

/** Signals every process in the group; a group that no longer exists is not an error. */
function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  if (!isSignallableId(pgid)) throw new Error(`refusing to signal process group ${pgid}`);
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if (errnoCode(err) !== 'ESRCH') throw err;
  }
}

function groupExists(pgid: number): boolean {
  if (!isSignallableId(pgid)) return false;
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    // EPERM: the group exists but is not ours to signal.
    return errnoCode(err) === 'EPERM';
  }
}

/**
 * Whether any process of the group still runs. Zombies do not count: once our
 * shell is gone, its children are reparented to PID 1, and a container's PID 1
 * often never reaps them, yet kill(-pgid, 0) keeps finding them. Without
 * procfs, kill(-pgid, 0) is all there is.
 */
async function groupAlive(pgid: number): Promise<boolean> {
  if (!groupExists(pgid)) return false;
  let entries: string[];
  try {
    entries = await fs.readdir('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readProcStat(Number(entry));
    if (stat && stat.pgrp === pgid && stat.state !== 'Z' && stat.state !== 'X') return true;
  }
  return false;
}

/** SIGTERM, up to `graceMs` for the group to go, then SIGKILL. */
async function terminateGroup(pgid: number, graceMs: number): Promise<void> {
  signalGroup(pgid, 'SIGTERM');
  if (await waitUntil(() => groupAlive(pgid).then((alive) => !alive), graceMs)) return;
  signalGroup(pgid, 'SIGKILL');
  if (!(await waitUntil(() => groupAlive(pgid).then((alive) => !alive), REAP_KILL_WAIT_MS))) {
    throw new Error(`process group ${pgid} is still there after SIGKILL`);
  }
}

/**
 * Whether a pid file describes processes that are still ours to stop. A live
 * pid with another start time is a recycled pid — and then the group cannot be
 * ours either, because Linux does not hand out a pid that is still some
 * group's id. A leader that is gone while its group lives means the group
 * holds what our process forked.
 */
async function isLeftOver(record: PidRecord): Promise<boolean> {
  const startTime = await readStartTime(record.pid);
  if (startTime !== null && record.startTime !== null && startTime !== record.startTime) return false;
  return groupAlive(record.pgid);
}

/** Field 22 of /proc/<pid>/stat, or null (no such process, or no procfs). */
async function readStartTime(pid: number): Promise<string | null> {
  return (await readProcStat(pid))?.startTime ?? null;
}

interface ProcStat {
  /** Field 3: R, S, D, Z (zombie), X (dead), ... */
  state: string;
  /** Field 5: the process group id. */
  pgrp: number;
  /** Field 22: start time in clock ticks after boot. */
  startTime: string;
}

/** The fields of /proc/<pid>/stat the supervisor uses, or null (no such process, or no procfs). */
async function readProcStat(pid: number): Promise<ProcStat | null> {
  let stat: string;
  try {
    stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Field 2 (the command name) is in parentheses and may itself hold spaces or ')'; fields[0] is field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const [state, pgrp, startTime] = [fields[0], fields[5 - 3], fields[22 - 3]];
  if (state === undefined || pgrp === undefined || startTime === undefined) return null;
  return { state, pgrp: Number(pgrp), startTime };
}

async function readPidFile(file: string): Promise<PidRecord | null> {
  try {
    return parsePidRecord(JSON.parse(await fs.readFile(file, 'utf8')) as unknown);
  } catch {
    return null;
  }
}

function parsePidRecord(value: unknown): PidRecord | null {
  if (typeof value !== 'object' || value === null) return null;
  const { pid, pgid, startTime, command, startedAt } = value as Record<string, unknown>;
  if (!isSignallableId(pid) || !isSignallableId(pgid)) return null;
  if (startTime !== null && typeof startTime !== 'string') return null;
  return {
    pid,
    pgid,
    startTime,
    command: typeof command === 'string' ? command : '',
    startedAt: typeof startedAt === 'string' ? startedAt : '',
  };
}

/** Group ids 0 and 1 must never be signalled: kill(-0) is our own group, kill(-1) is every process we may signal. */
function isSignallableId(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 1;
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; !(await check()); attempt++) {
    if (Date.now() >= deadline) return false;
    await sleep(Math.min(pollDelay(attempt), Math.max(deadline - Date.now(), 1)));
  }
  return true;
}

function pollDelay(attempt: number): number {
  return Math.min(POLL_FIRST_MS * 2 ** Math.min(attempt, 4), POLL_MAX_MS);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function errnoCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}
