import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { promisify } from 'node:util';
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
 *
 * Several instances on one machine
 * --------------------------------
 * `npm start` and any number of `quetzal worker` processes may share one
 * DATA_DIR, each with its own supervisor. The pid files in `runDir` are the
 * machine-wide truth about which server runs:
 *
 * - A pid file names its owner: the instance's pid, that process's start time
 *   (field 22 of /proc/<pid>/stat) and the boot id. The owner is alive while a
 *   process with that pid and start time exists in the same boot; a vanished
 *   pid, a recycled one (other start time) or another boot means it is dead.
 *   Files from before owners were recorded count as having a dead owner.
 * - `reapOrphans` stops only process groups whose owner is dead. What a live
 *   instance runs (another service, or another supervisor in this very
 *   process) is left alone.
 * - A start first claims the server by creating its pid file exclusively (a
 *   hard link, which fails if the file exists), before anything is spawned.
 *   If the file names a live process group, whoever owns it, or a claim whose
 *   owner is alive, the start is a no-op: there is never a second copy on the
 *   same volume. A file whose group is gone is replaced (after giving a live
 *   owner a moment to remove it itself).
 * - For a server it does not run itself, a supervisor reads the pid file on
 *   every call (nothing is cached): `state` is `running` while the recorded
 *   group lives (`starting` while only claimed, `stopping` while this
 *   supervisor is stopping it); `stop`, `restart` and `kill` signal the
 *   recorded process group and wait until it is gone (a restart then starts
 *   it here); console lines, the stop command included, are written to the
 *   group leader's standard input through `/proc/<pid>/fd/0`. That works
 *   because each process's standard input is a real pipe (a FIFO, opened and
 *   unlinked at once), not Node's socket pair: opening a pipe through /proc
 *   opens the same pipe. A stop whose command cannot be written falls back to
 *   signals; one that is not obeyed within the grace period ends in SIGKILL.
 * - A group whose owner died (an orphan) is still what runs on that volume:
 *   it reads `running`, a start is a no-op, a stop or kill ends it, and the
 *   next `reapOrphans` of any instance stops it.
 * - The owner notices the exit as usual and removes its pid file. When its
 *   shell was killed by SIGTERM, SIGINT or SIGHUP (someone else is stopping
 *   the group), the rest of the group gets the grace period to finish (a
 *   server saving its world) instead of being SIGKILLed at once.
 *
 * All instances must see the same processes (one pid namespace: the same
 * host, or the same container).
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
/** How long a start waits for a live instance to remove the pid file of its process that has just ended. */
const CLAIM_WAIT_MS = 5_000;
/** A bound on claim attempts, against a pid file that keeps changing under us. */
const MAX_CLAIM_ATTEMPTS = 200;
/** How long a stop waits for another instance to finish spawning a server it claimed. */
const FOREIGN_START_WAIT_MS = 10_000;
/** A temporary pid file younger than this that cannot be parsed may be one being written right now. */
const TEMP_FILE_MIN_AGE_MS = 30_000;
/** A leader killed by one of these was asked to stop by someone else: its group gets the grace period. */
const STOP_SIGNALS: ReadonlySet<string> = new Set(['SIGTERM', 'SIGINT', 'SIGHUP']);
/** `<uuid>.pid`, `<uuid>.pid.tmp` (older versions) and `<uuid>.pid.<token>.tmp`. */
const PID_FILE_NAME = /^([A-Za-z0-9_-]+)\.pid(?:(\.[0-9a-f]+)?(\.tmp))?$/;
/** `<uuid>.<token>.fifo` (a console pipe being opened) and `<uuid>.pid.<token>.gone` (a pid file being removed). */
const LEFTOVER_FILE_NAME = /^[A-Za-z0-9_-]+\.(?:[0-9a-f]+\.fifo|pid\.[0-9a-f]+\.gone)$/;
const HAS_PROCFS = fsSync.existsSync('/proc/self/stat');

const execFileAsync = promisify(execFile);
const openFd = promisify(fsSync.open);

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
  /** Our end of the process's standard input (a FIFO's write end, or Node's socket when no FIFO could be made). */
  readonly stdin: Writable | null;
  /** What the pid file holds now (the claim, then the full record): it is only removed while it still holds that. */
  pidFile: string;
  state: LiveState;
  /** Settles once the pid file was written (or writing it failed and was logged). */
  recorded: Promise<void>;
  /** Settles once the process exited and its pid file is gone; never rejects. */
  exited: Promise<void>;
  /** Settles once `launch` is done with the process (it reported `running`), so that `offline` never comes first. */
  launched: Promise<void>;
  markLaunched: () => void;
  killTimer: NodeJS.Timeout | undefined;
  /** When the group was last SIGKILLed: from then on, waiting for it to vanish is bounded. */
  killedAt: number | undefined;
}

/** The instance that runs a process; see "Several instances on one machine". */
interface OwnerRecord {
  pid: number;
  /** Field 22 of the owner's /proc/<pid>/stat; null without procfs. */
  startTime: string | null;
  /** /proc/sys/kernel/random/boot_id; null without procfs. */
  bootId: string | null;
}

/** The contents of `<runDir>/<uuid>.pid`. */
interface PidRecord {
  /** Null in a claim: the file is created before the process is spawned, so that two instances never both spawn it. */
  pid: number | null;
  pgid: number | null;
  /** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot): tells our process from a recycled pid. Null without procfs. */
  startTime: string | null;
  command: string;
  startedAt: string;
  /** Null in files written before owners were recorded: such an owner counts as dead. */
  owner: OwnerRecord | null;
  /** Random, per start: two claims never have the same contents. */
  token: string;
}

/** A pid file that names a process (not a mere claim). */
type SpawnedRecord = PidRecord & { pid: number; pgid: number };

/** A pid file as read: its exact text (for `removeIfUnchanged`) and what it says. */
interface PidFileContents {
  raw: string;
  record: PidRecord;
  state: 'starting' | 'running' | 'offline';
}

/** A pid file this supervisor created before spawning: its record and its exact text. */
interface Claim {
  record: PidRecord;
  text: string;
}

/** Our end of a server's console pipe; the read end goes to the child and is then closed here. */
interface StdinPipe {
  readFd: number;
  writer: net.Socket;
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
  /** Servers run by another instance that this one is stopping or killing right now (how many times over): they read `stopping`. */
  private readonly foreignHalts = new Map<string, number>();
  private closing = false;

  constructor(options: ProcessSupervisorOptions) {
    this.logDir = options.logDir;
    this.runDir = options.runDir;
    this.stopGraceMs = options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
    this.log = options.logger ?? silentLogger;
  }

  /**
   * The server's state: ours from memory, another instance's from its pid
   * file (read on every call; see "Several instances on one machine").
   */
  state(serverUuid: string): ServerState {
    const proc = this.processes.get(serverUuid);
    if (proc) return proc.state;
    if (this.foreignHalts.has(serverUuid)) return 'stopping';
    return this.readPidFileSync(serverUuid)?.state ?? 'offline';
  }

  /** The running process's pid (also its process group id), for diagnostics; another instance's too. */
  pid(serverUuid: string): number | undefined {
    const proc = this.processes.get(serverUuid);
    if (proc) return proc.pid;
    const found = this.readPidFileSync(serverUuid);
    return found?.state === 'running' ? (found.record.pid ?? undefined) : undefined;
  }

  /** Resolves once the process has spawned; a no-op when it is already running, here or under another instance. */
  start(target: SupervisedServer): Promise<void> {
    if (this.closing) return Promise.reject(shuttingDown());
    return this.serialize(target.uuid, () => this.launch(target));
  }

  /** Resolves once the process has exited; a no-op when it is not running. Also stops another instance's process. */
  stop(target: SupervisedServer): Promise<void> {
    return this.serialize(target.uuid, () => this.halt(target.uuid, target.stopCommand, { foreign: true }));
  }

  /** Stops the process (ours or another instance's), then starts it here. */
  restart(target: SupervisedServer): Promise<void> {
    if (this.closing) return Promise.reject(shuttingDown());
    return this.serialize(target.uuid, async () => {
      await this.halt(target.uuid, target.stopCommand, { foreign: true });
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
    if (!proc) return this.haltForeign(target.uuid, 'kill');
    this.setState(proc, 'stopping');
    this.killGroup(proc);
    await proc.exited;
  }

  /**
   * Writes a console line to the process's standard input; for another
   * instance's process, through /proc/<pid>/fd/0 of its group leader.
   */
  async sendCommand(serverUuid: string, line: string): Promise<void> {
    const proc = this.processes.get(serverUuid);
    if (!proc) return this.sendForeignCommand(serverUuid, line);
    const stdin = proc.stdin;
    if (proc.state === 'stopping' || !stdin || !stdin.writable) throw new ServerNotRunningError(serverUuid);
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
    const results = await Promise.allSettled(
      [...uuids].map((uuid) => this.serialize(uuid, () => this.halt(uuid, undefined, { foreign: false }))),
    );
    const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as unknown);
    if (failures.length > 0) throw new AggregateError(failures, 'Some server processes could not be stopped.');
  }

  /**
   * Call once when the daemon starts, before any start: stops the process
   * groups a previous instance left running (it crashed or was killed) and
   * deletes their pid files, so that afterwards every server process running
   * is owned by a live instance. Processes of live instances are left alone.
   */
  async reapOrphans(): Promise<void> {
    let names: string[];
    try {
      names = await fs.readdir(this.runDir);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return;
      throw err;
    }
    // What a crash in the middle of opening a console pipe or of removing a pid file leaves.
    await Promise.all(
      names
        .filter((name) => LEFTOVER_FILE_NAME.test(name))
        .map(async (name) => {
          const file = path.join(this.runDir, name);
          if (!(await isRecent(file, TEMP_FILE_MIN_AGE_MS))) await fs.rm(file, { force: true });
        }),
    );
    // `.tmp`: a crash between writing a pid file and moving it into place; its process may well run.
    const pidFiles = names.flatMap((name) => {
      const match = PID_FILE_NAME.exec(name);
      return match?.[1] ? [{ serverUuid: match[1], file: path.join(this.runDir, name), temporary: match[3] !== undefined }] : [];
    });
    await Promise.all(pidFiles.map((pidFile) => this.reapPidFile(pidFile)));
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
    const startup = target.startup;
    if (!startup) throw new NoStartupCommandError(target.uuid);
    assertSafeUuid(target.uuid);
    await assertDirectory(target.volumeDir, target.uuid);
    await Promise.all([fs.mkdir(this.logDir, { recursive: true }), fs.mkdir(this.runDir, { recursive: true })]);

    const claim = await this.claim(target, startup);
    if (claim === null) return; // another instance runs it, or is starting it
    let proc: ManagedProcess | undefined;
    try {
      proc = await this.spawnTracked(target, startup, claim);
    } finally {
      // Once tracked, the exit handling removes the pid file.
      if (!proc) await this.removePidFile(target.uuid, claim.text);
    }
    if (proc.state === 'starting' && this.processes.get(target.uuid) === proc) this.setState(proc, 'running');
    proc.markLaunched();
    this.log.info({ serverUuid: target.uuid, pid: proc.pid }, 'server process started');
    await proc.recorded;
  }

  /** Spawns the claimed server and tracks it; throws (nothing tracked) when it could not be spawned. */
  private async spawnTracked(target: SupervisedServer, startup: string, claim: Claim): Promise<ManagedProcess> {
    const pipe = await this.openStdinPipe(target.uuid);
    let logFile: fs.FileHandle;
    try {
      logFile = await fs.open(this.logPath(target.uuid), 'a');
    } catch (err) {
      closeStdinPipe(pipe);
      throw startFailure(target, err);
    }
    let child: ChildProcess;
    try {
      child = spawnServerProcess(target, startup, pipe?.readFd, logFile.fd);
    } catch (err) {
      closeStdinPipe(pipe);
      await logFile.close();
      throw startFailure(target, err);
    }
    // From here to `track` everything is synchronous, so no 'error' or 'exit' event can be missed.
    if (pipe) closeQuietly(pipe.readFd); // the child has its own copy
    const spawned = whenSpawned(child);
    child.on('error', (err) => this.log.error({ err, serverUuid: target.uuid }, 'server process error'));
    const stdin = pipe ? pipe.writer : child.stdin;
    stdin?.on('error', (err) => this.log.warn({ err, serverUuid: target.uuid }, 'server console write failed'));
    const proc = child.pid === undefined ? undefined : this.track(target, child, child.pid, stdin, claim);
    if (!proc) stdin?.destroy();
    try {
      // The child writes to its own copy of the descriptor, straight into the file.
      await logFile.close();
      await spawned;
    } catch (err) {
      proc?.markLaunched();
      throw startFailure(target, err);
    }
    if (!proc) throw startFailure(target, new Error('the process has no pid'));
    return proc;
  }

  /** Registers a freshly spawned process: state `starting`, pid file, exit handling. */
  private track(
    target: SupervisedServer,
    child: ChildProcess,
    pid: number,
    stdin: Writable | null,
    claim: Claim,
  ): ManagedProcess {
    let markLaunched = noop;
    const launched = new Promise<void>((resolve) => (markLaunched = resolve));
    const proc: ManagedProcess = {
      target,
      child,
      pid,
      stdin,
      pidFile: claim.text,
      state: 'starting',
      recorded: Promise.resolve(),
      exited: Promise.resolve(),
      launched,
      markLaunched,
      killTimer: undefined,
      killedAt: undefined,
    };
    proc.recorded = this.writePidFile(proc, claim.record);
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
   * undefined means the one the process was started with. With `foreign`, a
   * process another instance runs is stopped too.
   */
  private async halt(serverUuid: string, stopCommand: string | null | undefined, options: { foreign: boolean }): Promise<void> {
    const proc = this.processes.get(serverUuid);
    if (!proc) {
      if (options.foreign) await this.haltForeign(serverUuid, { stopCommand: stopCommand ?? null });
      return;
    }
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
    const stdin = proc.stdin;
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
   * container's main process: whatever it left running goes with it; one
   * killed by SIGTERM, SIGINT or SIGHUP means someone else is stopping the
   * group, which then gets the grace period.
   */
  private async afterExit(proc: ManagedProcess, code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    const serverUuid = proc.target.uuid;
    await proc.launched;
    if (proc.state !== 'stopping' && (await groupAlive(proc.pid))) {
      if (signal !== null && STOP_SIGNALS.has(signal)) {
        // Someone else (another instance, an administrator) asked the group to stop: let the server finish.
        this.log.info({ serverUuid, pid: proc.pid, signal }, 'server process was asked to stop from outside; waiting for it');
        this.setState(proc, 'stopping');
        proc.killTimer ??= setTimeout(() => this.killAfterGrace(proc), this.stopGraceMs);
      } else {
        this.killGroup(proc);
      }
    }
    if (!(await this.groupEnded(proc))) {
      this.log.error({ serverUuid, pgid: proc.pid }, 'server processes are still there after SIGKILL; giving up on them');
    }
    // Only now: a server still shutting down after its shell died must not see its console end under it.
    proc.stdin?.destroy();
    clearTimeout(proc.killTimer);
    if (this.processes.get(serverUuid) === proc) {
      this.processes.delete(serverUuid);
      this.emit(serverUuid, 'offline');
    }
    this.log.info({ serverUuid, pid: proc.pid, code, signal }, 'server process exited');
    await proc.recorded;
    await this.removePidFile(serverUuid, proc.pidFile);
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

  // ------------------------------------------------------------------ processes of other instances

  /**
   * Stops (or kills) a server another instance runs, or a dead instance left,
   * through its recorded process group; resolves once the group is gone.
   * Waits for a server that is still being spawned elsewhere.
   */
  private async haltForeign(serverUuid: string, how: { stopCommand: string | null } | 'kill'): Promise<void> {
    let found = await this.readPidFile(serverUuid);
    const deadline = Date.now() + FOREIGN_START_WAIT_MS;
    for (let attempt = 0; found?.state === 'starting'; attempt++) {
      if (Date.now() >= deadline) throw new Error(`Server ${serverUuid} is still being started by another instance.`);
      await sleep(pollDelay(attempt));
      found = await this.readPidFile(serverUuid);
    }
    if (found?.state !== 'running' || !isSpawned(found.record)) return;
    const { record, raw } = found;
    const logged = { serverUuid, pid: record.pid, ownerPid: record.owner?.pid };

    const halts = this.foreignHalts.get(serverUuid) ?? 0;
    this.foreignHalts.set(serverUuid, halts + 1);
    if (halts === 0) this.emit(serverUuid, 'stopping');
    try {
      if (how === 'kill') {
        await endGroup(record, 0, () => signalGroup(record.pgid, 'SIGKILL'));
      } else {
        const request = stopRequest(how.stopCommand);
        const outcome = await endGroup(record, this.stopGraceMs, async () => {
          if ('line' in request) {
            try {
              await writeToConsole(record, request.line);
              return;
            } catch (err) {
              this.log.warn({ err, ...logged }, 'could not write the stop command to the server\'s console; sending SIGTERM');
            }
          }
          signalGroup(record.pgid, 'signal' in request ? request.signal : 'SIGTERM');
        });
        if (outcome === 'killed') {
          this.log.warn({ ...logged, graceMs: this.stopGraceMs }, 'server process did not stop in time; killed it');
        }
      }
      this.log.info(logged, 'stopped a server process another instance ran');
    } finally {
      const left = (this.foreignHalts.get(serverUuid) ?? 1) - 1;
      if (left > 0) this.foreignHalts.set(serverUuid, left);
      else {
        this.foreignHalts.delete(serverUuid);
        this.emit(serverUuid, this.state(serverUuid));
      }
    }
    // A live owner removes its pid file itself once it sees its process exit.
    if (!ownerAlive(record.owner)) await this.removePidFile(serverUuid, raw);
  }

  private async sendForeignCommand(serverUuid: string, line: string): Promise<void> {
    if (this.foreignHalts.has(serverUuid)) throw new ServerNotRunningError(serverUuid);
    const found = await this.readPidFile(serverUuid);
    if (found?.state !== 'running' || !isSpawned(found.record)) throw new ServerNotRunningError(serverUuid);
    try {
      await writeToConsole(found.record, line);
    } catch (err) {
      this.log.warn(
        { err, serverUuid, pid: found.record.pid, ownerPid: found.record.owner?.pid },
        'could not write to the console of a server process another instance runs',
      );
      throw new ServerNotRunningError(serverUuid);
    }
  }

  /**
   * A pipe for the process's standard input: a FIFO, opened at both ends and
   * unlinked at once, so that other instances can open it through
   * /proc/<pid>/fd/0 (Node's own stdio pipe is a socket pair, which cannot be
   * opened that way). Null (and Node's pipe is used) when no FIFO can be made.
   */
  private async openStdinPipe(serverUuid: string): Promise<StdinPipe | null> {
    const fifo = path.join(this.runDir, `${serverUuid}.${randomToken()}.fifo`);
    try {
      await execFileAsync('mkfifo', ['-m', '600', fifo]);
    } catch (err) {
      this.log.warn({ err, serverUuid }, 'could not create a console pipe; other instances cannot write to this server\'s console');
      return null;
    }
    const { O_RDONLY, O_WRONLY, O_NONBLOCK } = fsSync.constants;
    const opened: number[] = [];
    try {
      // Each open below finds the other end already open, so none of them waits.
      const probe = await openFd(fifo, O_RDONLY | O_NONBLOCK);
      opened.push(probe);
      const writeFd = await openFd(fifo, O_WRONLY | O_NONBLOCK);
      opened.push(writeFd);
      const readFd = await openFd(fifo, O_RDONLY); // blocking: the server reads it
      opened.push(readFd);
      closeQuietly(probe);
      return { readFd, writer: new net.Socket({ fd: writeFd, readable: false, writable: true }) };
    } catch (err) {
      for (const fd of opened) closeQuietly(fd);
      this.log.warn({ err, serverUuid }, 'could not open a console pipe; other instances cannot write to this server\'s console');
      return null;
    } finally {
      await fs.rm(fifo, { force: true });
    }
  }

  // ------------------------------------------------------------------ pid files and orphans

  private logPath(serverUuid: string): string {
    return path.join(this.logDir, `${serverUuid}.log`);
  }

  private pidPath(serverUuid: string): string {
    return path.join(this.runDir, `${serverUuid}.pid`);
  }

  private readPidFileSync(serverUuid: string): PidFileContents | null {
    if (!isSafeUuid(serverUuid)) return null;
    const file = this.pidPath(serverUuid);
    // Most servers are offline: existsSync answers that without building an error to throw.
    if (!fsSync.existsSync(file)) return null;
    let raw: string;
    try {
      raw = fsSync.readFileSync(file, 'utf8');
    } catch {
      return null;
    }
    return examinePidFile(raw);
  }

  private async readPidFile(serverUuid: string): Promise<PidFileContents | null> {
    if (!isSafeUuid(serverUuid)) return null;
    const raw = await readText(this.pidPath(serverUuid));
    return raw === null ? null : examinePidFile(raw);
  }

  /**
   * Creates the pid file, as a claim, before anything is spawned: a hard link
   * fails when the file exists, so of two instances starting the same server
   * only one goes on. Resolves with the claim, or null when the server runs
   * (or is being started) already, here or elsewhere.
   */
  private async claim(target: SupervisedServer, startup: string): Promise<Claim | null> {
    const file = this.pidPath(target.uuid);
    const record: PidRecord = {
      pid: null,
      pgid: null,
      startTime: null,
      command: startup,
      startedAt: new Date().toISOString(),
      owner: thisInstance(),
      token: randomToken(),
    };
    const text = serializePidRecord(record);
    const temporary = `${file}.${record.token}.tmp`;
    await fs.writeFile(temporary, text);
    try {
      const patience = Date.now() + CLAIM_WAIT_MS;
      for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS; attempt++) {
        try {
          await fs.link(temporary, file);
          return { record, text };
        } catch (err) {
          if (errnoCode(err) !== 'EEXIST') throw startFailure(target, err);
        }
        const raw = await readText(file);
        if (raw === null) continue; // removed meanwhile
        const existing = examinePidFile(raw);
        if (existing && existing.state !== 'offline') {
          this.log.info(
            { serverUuid: target.uuid, pid: existing.record.pid, ownerPid: existing.record.owner?.pid },
            'server process already runs under another instance; not starting a second one',
          );
          return null;
        }
        // Its process is gone. A live owner removes the file itself once it has noticed: give it a moment.
        if (existing && ownerAlive(existing.record.owner) && Date.now() < patience) {
          await sleep(pollDelay(attempt));
          continue;
        }
        await removeIfUnchanged(file, raw);
      }
      throw startFailure(target, new Error(`its pid file ${file} keeps changing`));
    } finally {
      await fs.rm(temporary, { force: true });
    }
  }

  /**
   * Replaces the claim with the full record, via a temporary file and a
   * rename, so a crash never leaves half a pid file. Nobody else replaces a
   * claim while its owner lives, so the rename overwrites our own claim.
   */
  private async writePidFile(proc: ManagedProcess, claim: PidRecord): Promise<void> {
    const record: PidRecord = {
      ...claim,
      pid: proc.pid,
      pgid: proc.pid,
      startTime: await readStartTime(proc.pid),
      startedAt: new Date().toISOString(),
    };
    const text = serializePidRecord(record);
    const file = this.pidPath(proc.target.uuid);
    // A fresh name: the claim's temporary file was a hard link to the pid file itself.
    const temporary = `${file}.${randomToken()}.tmp`;
    try {
      await fs.writeFile(temporary, text);
      await fs.rename(temporary, file);
      proc.pidFile = text;
    } catch (err) {
      await fs.rm(temporary, { force: true }).catch(noop);
      this.log.error(
        { err, serverUuid: proc.target.uuid, pid: proc.pid },
        'could not write the pid file; a crash would leave this process unnoticed',
      );
    }
  }

  /** Only removes the file while it still holds `text`: a newer process of the same server may have replaced it. */
  private async removePidFile(serverUuid: string, text: string): Promise<void> {
    await removeIfUnchanged(this.pidPath(serverUuid), text).catch((err: unknown) => {
      this.log.warn({ err, serverUuid }, 'could not remove the pid file');
    });
  }

  private async reapPidFile({ serverUuid, file, temporary }: { serverUuid: string; file: string; temporary: boolean }): Promise<void> {
    const raw = await readText(file);
    if (raw === null) return; // removed meanwhile
    const found = examinePidFile(raw);
    if (!found) {
      // A temporary file may be one that another instance is writing right now.
      if (temporary && (await isRecent(file, TEMP_FILE_MIN_AGE_MS))) return;
      this.log.warn({ serverUuid, file }, 'removing an unreadable pid file');
    } else if (ownerAlive(found.record.owner)) {
      return; // run by a live instance: this one, or another (see "Several instances on one machine")
    } else if (isSpawned(found.record) && found.state === 'running') {
      const record = found.record;
      this.log.warn(
        { serverUuid, pid: record.pid, ownerPid: record.owner?.pid, command: record.command },
        'stopping a server process left behind by a previous run',
      );
      try {
        await endGroup(record, Math.min(this.stopGraceMs, MAX_REAP_GRACE_MS), () => signalGroup(record.pgid, 'SIGTERM'));
      } catch (err) {
        this.log.error({ err, serverUuid, pid: record.pid }, 'could not stop a left-over server process');
        return; // keep the file: the daemon's next start tries again
      }
    }
    if (temporary) await fs.rm(file, { force: true });
    else await removeIfUnchanged(file, raw);
  }
}

// ---------------------------------------------------------------------- helpers

const silentLogger: ProcessLogger = { info: noop, warn: noop, error: noop };

function noop(): void {}

/**
 * `/bin/sh -c <startup>` in the volume folder, as the leader of a new process
 * group, with stdin read from `stdinFd` (Node's pipe without one) and stdout
 * and stderr both going to the (append-mode) log file descriptor. May throw
 * synchronously; usually reports failure as an 'error' event.
 */
function spawnServerProcess(target: SupervisedServer, startup: string, stdinFd: number | undefined, logFd: number): ChildProcess {
  return spawn(startup, {
    shell: true,
    cwd: target.volumeDir,
    detached: true,
    stdio: [stdinFd ?? 'pipe', logFd, logFd],
    env: serverEnvironment(target.uuid),
  });
}

function closeStdinPipe(pipe: StdinPipe | null): void {
  if (!pipe) return;
  closeQuietly(pipe.readFd);
  pipe.writer.destroy();
}

function closeQuietly(fd: number): void {
  try {
    fsSync.closeSync(fd);
  } catch {
    // already closed
  }
}

function randomToken(): string {
  return randomBytes(8).toString('hex');
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
  if (!isSafeUuid(serverUuid)) throw new Error(`"${serverUuid}" is not a valid server uuid.`);
}

function isSafeUuid(serverUuid: string): boolean {
  return /^[A-Za-z0-9_-]+$/.test(serverUuid);
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
    if (stat && stat.pgrp === pgid && !isGone(stat)) return true;
  }
  return false;
}

/** `groupAlive` for `state()`, which is synchronous. */
function groupAliveSync(pgid: number): boolean {
  if (!groupExists(pgid)) return false;
  let entries: string[];
  try {
    entries = fsSync.readdirSync('/proc');
  } catch {
    return true;
  }
  return entries.some((entry) => {
    if (!/^\d+$/.test(entry)) return false;
    const stat = readProcStatSync(Number(entry));
    return stat !== null && stat.pgrp === pgid && !isGone(stat);
  });
}

/**
 * The state of the leader a pid file names. A live pid with another start
 * time is a recycled pid — and then the group cannot be the recorded one
 * either, because Linux does not hand out a pid that is still some group's id.
 */
function leaderStatus(record: SpawnedRecord): 'alive' | 'recycled' | 'gone' {
  const stat = readProcStatSync(record.pid);
  if (!stat) return !HAS_PROCFS && processExists(record.pid) ? 'alive' : 'gone';
  if (isGone(stat)) return 'gone';
  if (record.startTime !== null && stat.startTime !== record.startTime) return 'recycled';
  return 'alive';
}

/**
 * Whether the process group a pid file names still runs. A leader that is
 * gone while its group lives means the group holds what the server forked.
 */
function recordedGroupAliveSync(record: SpawnedRecord): boolean {
  const leader = leaderStatus(record);
  return leader === 'gone' ? groupAliveSync(record.pgid) : leader === 'alive';
}

async function recordedGroupAlive(record: SpawnedRecord): Promise<boolean> {
  const leader = leaderStatus(record);
  return leader === 'gone' ? groupAlive(record.pgid) : leader === 'alive';
}

/**
 * Asks a recorded process group to stop (`ask`), gives it up to `graceMs` to
 * go, then SIGKILLs it; throws if it is still there after that.
 */
async function endGroup(record: SpawnedRecord, graceMs: number, ask: () => void | Promise<void>): Promise<'stopped' | 'killed'> {
  const ended = async () => !(await recordedGroupAlive(record));
  await ask();
  if (await waitUntil(ended, graceMs)) return 'stopped';
  signalGroup(record.pgid, 'SIGKILL');
  if (!(await waitUntil(ended, REAP_KILL_WAIT_MS))) {
    throw new Error(`process group ${record.pgid} is still there after SIGKILL`);
  }
  return 'killed';
}

/**
 * Writes a console line to the standard input of a process another instance
 * started: opening /proc/<pid>/fd/0 of its group leader opens the very pipe
 * its owner writes to. Non-blocking: a full pipe (a server that stopped
 * reading) is an error, not a hang. Refuses anything but a pipe.
 */
async function writeToConsole(record: SpawnedRecord, line: string): Promise<void> {
  if (leaderStatus(record) !== 'alive') throw new Error('the process that reads the console is gone');
  const stdin = `/proc/${record.pid}/fd/0`;
  if (!(await fs.stat(stdin)).isFIFO()) throw new Error('its standard input is not a pipe');
  const { O_WRONLY, O_NONBLOCK, O_NOCTTY } = fsSync.constants;
  const handle = await fs.open(stdin, O_WRONLY | O_NONBLOCK | O_NOCTTY);
  try {
    if (!(await handle.stat()).isFIFO()) throw new Error('its standard input is not a pipe');
    // The pid might have been recycled between the check and the open.
    if (leaderStatus(record) !== 'alive') throw new Error('the process that reads the console is gone');
    const data = Buffer.from(`${line}\n`);
    for (let offset = 0; offset < data.length; ) {
      const { bytesWritten } = await handle.write(data, offset, data.length - offset);
      if (bytesWritten <= 0) throw new Error('the console pipe takes nothing');
      offset += bytesWritten;
    }
  } finally {
    await handle.close();
  }
}

// ---------------------------------------------------------------------- owners

let self: OwnerRecord | undefined;

/** This process as a pid file's owner. */
function thisInstance(): OwnerRecord {
  self ??= { pid: process.pid, startTime: readProcStatSync(process.pid)?.startTime ?? null, bootId: readBootId() };
  return self;
}

function readBootId(): string | null {
  try {
    return fsSync.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
  } catch {
    return null;
  }
}

/**
 * Whether the instance that wrote a pid file still runs: same boot, and a
 * live process with its pid and start time. An unknown owner (a file from
 * before owners were recorded) counts as dead.
 */
function ownerAlive(owner: OwnerRecord | null): boolean {
  if (!owner) return false;
  const me = thisInstance();
  if (owner.bootId !== null && me.bootId !== null && owner.bootId !== me.bootId) return false;
  if (owner.pid === me.pid) return owner.startTime === null || me.startTime === null || owner.startTime === me.startTime;
  const stat = readProcStatSync(owner.pid);
  if (!stat) return !HAS_PROCFS && processExists(owner.pid);
  return !isGone(stat) && (owner.startTime === null || stat.startTime === owner.startTime);
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoCode(err) === 'EPERM';
  }
}

// ---------------------------------------------------------------------- /proc

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
  try {
    return parseProcStat(await fs.readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

function readProcStatSync(pid: number): ProcStat | null {
  try {
    return parseProcStat(fsSync.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

function parseProcStat(stat: string): ProcStat | null {
  // Field 2 (the command name) is in parentheses and may itself hold spaces or ')'; fields[0] is field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const [state, pgrp, startTime] = [fields[0], fields[5 - 3], fields[22 - 3]];
  if (state === undefined || pgrp === undefined || startTime === undefined) return null;
  return { state, pgrp: Number(pgrp), startTime };
}

/** A zombie or dead process: it runs no more, whatever kill(pid, 0) says. */
function isGone(stat: ProcStat): boolean {
  return stat.state === 'Z' || stat.state === 'X';
}

// ---------------------------------------------------------------------- pid file contents

function serializePidRecord(record: PidRecord): string {
  return `${JSON.stringify(record)}\n`;
}

/** What a pid file's text says, or null when it is not a pid file at all. */
function examinePidFile(raw: string): PidFileContents | null {
  let record: PidRecord | null;
  try {
    record = parsePidRecord(JSON.parse(raw) as unknown);
  } catch {
    return null;
  }
  return record && { raw, record, state: recordedState(record) };
}

/** `starting` for a claim of a live owner, `running` while the recorded group lives, else `offline`. */
function recordedState(record: PidRecord): PidFileContents['state'] {
  if (!isSpawned(record)) return ownerAlive(record.owner) ? 'starting' : 'offline';
  return recordedGroupAliveSync(record) ? 'running' : 'offline';
}

function isSpawned(record: PidRecord): record is SpawnedRecord {
  return record.pid !== null && record.pgid !== null;
}

function parsePidRecord(value: unknown): PidRecord | null {
  if (typeof value !== 'object' || value === null) return null;
  const { pid, pgid, startTime, command, startedAt, owner, token } = value as Record<string, unknown>;
  const parsedOwner = parseOwner(owner);
  if (owner !== undefined && owner !== null && !parsedOwner) return null;
  const claimed = pid === null && pgid === null && parsedOwner !== null;
  if (!claimed && (!isSignallableId(pid) || !isSignallableId(pgid))) return null;
  if (startTime !== null && typeof startTime !== 'string') return null;
  return {
    pid: claimed ? null : (pid as number),
    pgid: claimed ? null : (pgid as number),
    startTime,
    command: typeof command === 'string' ? command : '',
    startedAt: typeof startedAt === 'string' ? startedAt : '',
    owner: parsedOwner,
    token: typeof token === 'string' ? token : '',
  };
}

function parseOwner(value: unknown): OwnerRecord | null {
  if (typeof value !== 'object' || value === null) return null;
  const { pid, startTime, bootId } = value as Record<string, unknown>;
  if (!isSignallableId(pid)) return null;
  if (startTime !== null && typeof startTime !== 'string') return null;
  if (bootId !== null && typeof bootId !== 'string') return null;
  return { pid, startTime, bootId };
}

/** Group ids 0 and 1 must never be signalled: kill(-0) is our own group, kill(-1) is every process we may signal. */
function isSignallableId(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 1;
}

// ---------------------------------------------------------------------- files

/** A file's text, or null when it does not exist (or cannot be read). */
async function readText(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch {
    return null;
  }
}

/**
 * Removes `file` only if it still holds `expected`. The file is first moved
 * aside (a rename is atomic), then compared: one that another instance wrote
 * in the meantime is put back, unless yet another took its place.
 */
async function removeIfUnchanged(file: string, expected: string): Promise<boolean> {
  const aside = `${file}.${randomToken()}.gone`;
  try {
    await fs.rename(file, aside);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return false;
    throw err;
  }
  try {
    if ((await readText(aside)) === expected) return true;
    await fs.link(aside, file).catch(noop);
    return false;
  } finally {
    await fs.rm(aside, { force: true });
  }
}

async function isRecent(file: string, ageMs: number): Promise<boolean> {
  const stats = await fs.stat(file).catch(() => null);
  return stats !== null && Date.now() - stats.mtimeMs < ageMs;
}

// ---------------------------------------------------------------------- waiting

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
