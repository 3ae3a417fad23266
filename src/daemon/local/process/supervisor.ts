import fs from 'node:fs/promises';
import path from 'node:path';
import type { ServerState } from '../../daemon.js';
import { consoleBacklog, queueConsoleLine } from './console.js';
import { DEFAULT_CONSOLE_LOG_BYTES, DEFAULT_CONSOLE_LOG_CHECK_MS } from './console-log.js';
import { NoStartupCommandError, ServerNotRunningError, shuttingDown, startFailure } from './errors.js';
import { DoneLines, type DoneWatch } from './done-lines.js';
import { ForeignProcesses } from './foreign-processes.js';
import { noop } from './helpers.js';
import { GroupLauncher } from './group-launcher.js';
import type { LaunchedProcess, ServerLauncher, UsageSample } from './launcher.js';
import {
  groupEnded,
  killAfterGrace,
  killGroup,
  managedProcess,
  recordOf,
  requestStop,
  type LiveState,
  type ManagedProcess,
} from './managed-process.js';
import { reapOrphans } from './orphans.js';
import { PidFiles, type Claim } from './pid-files.js';
import { PowerQueue } from './power-queue.js';
import { OutOfMemoryReports } from './out-of-memory.js';
import { readProcStatSync } from './proc.js';
import { groupAlive } from './process-group.js';
import { isSpawned, type PidFileContents } from './pid-record.js';
import { assertDirectory } from './spawn-server.js';
import { StateEvents } from './state-events.js';
import {
  assertSafeUuid,
  silentLogger,
  type ProcessLogger,
  type ProcessSupervisorOptions,
  type StateListener,
  type SupervisedServer,
} from './supervisor-options.js';

// The supervisor's whole public face, so that callers need this one module.
export { ConsoleBusyError, NoStartupCommandError, ServerNotRunningError } from './errors.js';
export type { ProcessLogger, ProcessSupervisorOptions, StateListener, SupervisedServer } from './supervisor-options.js';
export type { ServerLauncher, UsageSample } from './launcher.js';

export { OUT_OF_MEMORY_LINE } from './out-of-memory.js';

/**
 * The local daemon's process supervisor (docs/reference/schedules.md#running-schedules): one child process per server
 * with a startup command, run in the server's volume folder, its console on
 * standard input and its output appended to `<logDir>/<uuid>.log` (rotated
 * at a size limit, see console-log.ts).
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

const DEFAULT_STOP_GRACE_MS = 10_000;
/** A leader killed by one of these was asked to stop by someone else: its group gets the grace period. */
const STOP_SIGNALS: ReadonlySet<string> = new Set(['SIGTERM', 'SIGINT', 'SIGHUP']);

export class ProcessSupervisor {
  private readonly logDir: string;
  private readonly runDir: string;
  private readonly stopGraceMs: number;
  private readonly consoleLogBytes: number;
  private readonly consoleLogCheckMs: number;
  private readonly log: ProcessLogger;
  private readonly processes = new Map<string, ManagedProcess>();
  private readonly pidFiles: PidFiles;
  private readonly queue = new PowerQueue();
  private readonly events: StateEvents;
  private readonly foreign: ForeignProcesses;
  private readonly launcher: ServerLauncher;
  private readonly outOfMemory: OutOfMemoryReports;
  private readonly doneLines: DoneLines;
  private closing = false;

  constructor(options: ProcessSupervisorOptions) {
    this.logDir = options.logDir;
    this.runDir = options.runDir;
    this.stopGraceMs = options.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
    this.consoleLogBytes = options.consoleLogBytes ?? DEFAULT_CONSOLE_LOG_BYTES;
    this.consoleLogCheckMs = options.consoleLogCheckMs ?? DEFAULT_CONSOLE_LOG_CHECK_MS;
    this.log = options.logger ?? silentLogger;
    this.launcher = options.launcher ?? new GroupLauncher(this.runDir, this.log);
    this.pidFiles = new PidFiles(this.runDir, this.log);
    this.events = new StateEvents(this.log);
    this.outOfMemory = new OutOfMemoryReports(this.log);
    this.doneLines = new DoneLines(this.logDir, options.watchConsole);
    this.foreign = new ForeignProcesses(
      this.pidFiles,
      this.events,
      this.stopGraceMs,
      this.log,
      (uuid) => this.state(uuid),
      this.launcher,
    );
  }

  /**
   * The server's state: ours from memory, another instance's from its pid
   * file (read on every call; see "Several instances on one machine").
   */
  state(serverUuid: string): ServerState {
    const proc = this.processes.get(serverUuid);
    if (proc) return proc.state;
    if (this.foreign.isHalting(serverUuid)) return 'stopping';
    return this.pidFiles.readSync(serverUuid)?.state ?? 'offline';
  }

  /** The running process's pid (also its process group id), for diagnostics; another instance's too. */
  pid(serverUuid: string): number | undefined {
    const proc = this.processes.get(serverUuid);
    if (proc) return proc.pid;
    const found = this.pidFiles.readSync(serverUuid);
    return found?.state === 'running' ? (found.record.pid ?? undefined) : undefined;
  }

  /** Whether processes run confined (docs/reference/containment.md). */
  get confined(): boolean {
    return this.launcher.confined;
  }

  /**
   * Memory and CPU time the server's processes use now; null when none runs.
   * Another instance's server is read through its pid file.
   */
  usage(serverUuid: string): UsageSample | null {
    const proc = this.processes.get(serverUuid);
    if (proc) return this.launcher.usage(serverUuid, recordOf(proc));
    const found = this.pidFiles.readSync(serverUuid);
    if (found?.state !== 'running' || !isSpawned(found.record)) return null;
    return this.launcher.usage(serverUuid, found.record);
  }

  /** When the server's running process was started (ms since the epoch), or null when none runs. */
  startedAt(serverUuid: string): number | null {
    const proc = this.processes.get(serverUuid);
    if (proc) return proc.startedAt;
    const found = this.pidFiles.readSync(serverUuid);
    if (found?.state !== 'running') return null;
    const startedAt = Date.parse(found.record.startedAt);
    return Number.isNaN(startedAt) ? null : startedAt;
  }

  /** Told when the kernel killed one of our servers for using more memory than its limit (docs/reference/containment.md). */
  onOutOfMemory(listener: (serverUuid: string) => void): () => void {
    return this.outOfMemory.subscribe(listener);
  }

  /** Resolves once the process has spawned; a no-op when it is already running, here or under another instance. */
  start(target: SupervisedServer): Promise<void> {
    if (this.closing) return Promise.reject(shuttingDown());
    return this.queue.run(target.uuid, () => this.launch(target));
  }

  /** Resolves once the process has exited; a no-op when it is not running. Also stops another instance's process. */
  stop(target: SupervisedServer): Promise<void> {
    return this.queue.run(target.uuid, () => this.halt(target.uuid, target.stopCommand, { foreign: true }));
  }

  /** Stops the process (ours or another instance's), then starts it here. */
  restart(target: SupervisedServer): Promise<void> {
    if (this.closing) return Promise.reject(shuttingDown());
    return this.queue.run(target.uuid, async () => {
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
    if (!proc) return this.foreign.halt(target.uuid, 'kill');
    this.setState(proc, 'stopping');
    killGroup(proc, this.log);
    await proc.exited;
  }

  /**
   * Writes a console line to the process's standard input; for another
   * instance's process, through /proc/<pid>/fd/0 of its group leader.
   */
  async sendCommand(serverUuid: string, line: string): Promise<void> {
    const proc = this.processes.get(serverUuid);
    if (!proc) return this.foreign.sendCommand(serverUuid, line);
    const stdin = proc.stdin;
    if (proc.state === 'stopping' || !stdin || !stdin.writable) throw new ServerNotRunningError(serverUuid);
    queueConsoleLine(stdin, serverUuid, line);
  }

  /** Bytes of console input waiting for our process to read them (0 for another instance's); bounded by CONSOLE_BACKLOG_LIMIT. */
  consoleBacklog(serverUuid: string): number {
    const stdin = this.processes.get(serverUuid)?.stdin;
    return stdin ? consoleBacklog(stdin) : 0;
  }

  onStateChange(listener: StateListener): () => void {
    return this.events.subscribe(listener);
  }

  /**
   * Stops every process (each with its stop command and grace period, all at
   * once) and resolves when all have exited; with `keep` (docs/reference/power-and-console.md#servers-outlive-the-service,
   * SERVERS_ON_SHUTDOWN=keep), leaves running every container whose monitor
   * outlives the service (its pid file stays, naming this instance, which the
   * next start adopts from) and stops only the rest (plain process groups,
   * whose console dies with the service). Starts asked for before are carried
   * out (then stopped or left); starts asked for afterwards fail.
   */
  async shutdownAll(options: { keep?: boolean } = {}): Promise<void> {
    this.closing = true;
    // Queued actions count too: a start in flight is waited for, then stopped or left.
    const uuids = new Set([...this.processes.keys(), ...this.queue.servers()]);
    const results = await Promise.allSettled(
      [...uuids].map((uuid) =>
        this.queue.run(uuid, async () => {
          if (options.keep && this.leave(uuid)) return;
          await this.halt(uuid, undefined, { foreign: false });
        }),
      ),
    );
    const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as unknown);
    if (failures.length > 0) throw new AggregateError(failures, 'Some server processes could not be stopped.');
  }

  /**
   * Call once when the daemon starts, before any start: stops the process
   * groups a previous instance left running (it crashed or was killed) and
   * deletes their pid files, so that afterwards every server process running
   * is owned by a live instance. Processes of live instances are left alone, and so is what `keep` names (an install's network).
   */
  async reapOrphans(keep: (serverUuid: string) => boolean = () => false): Promise<void> {
    await reapOrphans(this.runDir, this.stopGraceMs, this.log, this.launcher, (serverUuid, found) =>
      this.adopt(serverUuid, found),
    );
    // What no pid file accounts for: a crash between starting a container and writing its pid file.
    await this.launcher.sweep((uuid) => this.processes.has(uuid) || this.pidFiles.readSync(uuid) !== null || keep(uuid));
  }

  /**
   * Leaves a running container to its monitor (shutdown with keep): stops
   * watching it and forgets it; its pid file stays. False (and nothing done)
   * for a process that cannot outlive the service.
   */
  private leave(serverUuid: string): boolean {
    const proc = this.processes.get(serverUuid);
    // A server still `starting` is left too: the next start adopts it as `running` (done-lines.ts).
    if (!proc || !proc.container || proc.state === 'stopping') return false;
    proc.doneWatch?.cancel();
    proc.stopLogRotation();
    clearTimeout(proc.killTimer);
    proc.stdin?.destroy();
    this.processes.delete(serverUuid);
    this.log.info({ serverUuid, pid: proc.pid }, 'server left running for the next start to adopt');
    return true;
  }

  /** Takes over a dead instance's running server (reapOrphans): false when its launcher cannot. */
  private async adopt(serverUuid: string, found: PidFileContents): Promise<boolean> {
    if (!isSpawned(found.record) || this.processes.has(serverUuid)) return false;
    const record = found.record;
    const launched = this.launcher.adopt(serverUuid, record);
    if (!launched) return false;
    const text = await this.pidFiles.adopt(serverUuid, found).catch((err: unknown) => {
      this.log.warn({ err, serverUuid }, 'could not take over the pid file of a running server');
      return null;
    });
    if (text === null) {
      launched.stopWatching();
      launched.stdin?.destroy();
      return this.pidFiles.readSync(serverUuid)?.state === 'running'; // someone else adopted it: not ours to stop
    }
    launched.stdin?.on('error', (err) => this.log.warn({ err, serverUuid }, 'server console write failed'));
    const startedAt = Date.parse(record.startedAt);
    const proc = managedProcess({
      target: { uuid: serverUuid, startup: record.command, stopCommand: null, volumeDir: '' },
      pid: record.pid,
      container: launched.container,
      startTime: record.startTime,
      startedAt: Number.isNaN(startedAt) ? Date.now() : startedAt,
      stdin: launched.stdin,
      pidFile: text,
      state: 'running',
      stopLogRotation: launched.stopWatching,
    });
    proc.exited = launched.exited.then(({ code, signal }) => this.afterExit(proc, code, signal));
    this.processes.set(serverUuid, proc);
    this.log.info(
      { serverUuid, pid: record.pid, previousOwner: record.owner?.pid },
      'adopted a server a previous run left running',
    );
    this.events.emit(serverUuid, 'running');
    return true;
  }

  private async launch(target: SupervisedServer): Promise<void> {
    if (this.processes.has(target.uuid)) return;
    const startup = target.startup;
    if (!startup) throw new NoStartupCommandError(target.uuid);
    assertSafeUuid(target.uuid);
    await assertDirectory(target.volumeDir, target.uuid);
    await Promise.all([fs.mkdir(this.logDir, { recursive: true }), fs.mkdir(this.runDir, { recursive: true })]);

    const claim = await this.pidFiles.claim(target, startup);
    if (claim === null) return; // another instance runs it, or is starting it
    let proc: ManagedProcess | undefined;
    let done: DoneWatch | null = null;
    try {
      // Under the claim: no other instance starts it meanwhile (the egg's config files, docs/reference/eggs-and-installs.md).
      await target.beforeLaunch?.();
      done = this.doneLines.arm(target); // before the spawn: its line may be the first thing it prints
      proc = await this.spawnTracked(target, startup, claim);
    } finally {
      // Once tracked, the exit handling removes the pid file.
      if (!proc) {
        done?.cancel();
        await this.pidFiles.remove(target.uuid, claim.text);
      }
    }
    if (proc.state === 'starting' && this.processes.get(target.uuid) === proc) this.untilDone(proc, done);
    else done?.cancel();
    proc.markLaunched();
    this.log.info({ serverUuid: target.uuid, pid: proc.pid }, 'server process started');
    await proc.recorded;
  }

  /** `running` now, or (docs/reference/eggs-and-installs.md) once the console printed one of the server's done lines while it is still `starting`. */
  private untilDone(proc: ManagedProcess, done: DoneWatch | null): void {
    if (!done) return this.setState(proc, 'running');
    proc.doneWatch = done;
    done.whenDone(() => {
      if (proc.state === 'starting' && this.processes.get(proc.target.uuid) === proc) this.setState(proc, 'running');
    });
  }

  /** Starts the claimed server and tracks it; throws (nothing tracked, nothing running) when it could not be started. */
  private async spawnTracked(target: SupervisedServer, startup: string, claim: Claim): Promise<ManagedProcess> {
    let launched: LaunchedProcess;
    try {
      const log = { path: this.logPath(target.uuid), maxBytes: this.consoleLogBytes, checkMs: this.consoleLogCheckMs };
      launched = await this.launcher.launch(target, startup, log);
    } catch (err) {
      throw startFailure(target, err);
    }
    launched.stdin?.on('error', (err) => this.log.warn({ err, serverUuid: target.uuid }, 'server console write failed'));
    return this.track(target, launched, claim);
  }

  /** Registers a freshly started process: state `starting`, pid file, exit handling. */
  private track(target: SupervisedServer, launched: LaunchedProcess, claim: Claim): ManagedProcess {
    let markLaunched = noop;
    const launchDone = new Promise<void>((resolve) => (markLaunched = resolve));
    const proc = managedProcess({
      target,
      pid: launched.pid,
      container: launched.container,
      startTime: readProcStatSync(launched.pid)?.startTime ?? null,
      startedAt: Date.now(),
      stdin: launched.stdin,
      pidFile: claim.text,
      state: 'starting',
      launched: launchDone,
      markLaunched,
      stopLogRotation: launched.stopWatching,
    });
    proc.recorded = this.pidFiles.record(proc, claim.record);
    proc.exited = launched.exited.then(({ code, signal }) => this.afterExit(proc, code, signal));
    this.processes.set(target.uuid, proc);
    this.events.emit(target.uuid, 'starting');
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
      if (options.foreign) await this.foreign.halt(serverUuid, { stopCommand: stopCommand ?? null });
      return;
    }
    this.setState(proc, 'stopping');
    proc.killTimer ??= setTimeout(() => killAfterGrace(proc, this.stopGraceMs, this.log), this.stopGraceMs);
    try {
      requestStop(proc, stopCommand === undefined ? proc.target.stopCommand : stopCommand);
    } catch (err) {
      clearTimeout(proc.killTimer);
      proc.killTimer = undefined;
      if (this.processes.get(serverUuid) === proc) this.setState(proc, 'running');
      throw err;
    }
    await proc.exited;
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
        proc.killTimer ??= setTimeout(() => killAfterGrace(proc, this.stopGraceMs, this.log), this.stopGraceMs);
      } else {
        killGroup(proc, this.log);
      }
    }
    if (!(await groupEnded(proc))) {
      this.log.error({ serverUuid, pgid: proc.pid }, 'server processes are still there after SIGKILL; giving up on them');
    }
    // Only now: a server still shutting down after its shell died must not see its console end under it.
    proc.doneWatch?.cancel();
    proc.stdin?.destroy();
    proc.stopLogRotation();
    clearTimeout(proc.killTimer);
    await this.outOfMemory.release(this.launcher, serverUuid, recordOf(proc), this.logPath(serverUuid));
    if (this.processes.get(serverUuid) === proc) {
      this.processes.delete(serverUuid);
      this.events.emit(serverUuid, 'offline');
    }
    this.log.info({ serverUuid, pid: proc.pid, code, signal }, 'server process exited');
    await proc.recorded;
    await this.pidFiles.remove(serverUuid, proc.pidFile);
  }

  private setState(proc: ManagedProcess, state: LiveState): void {
    if (proc.state === state) return;
    proc.state = state;
    this.events.emit(proc.target.uuid, state);
  }

  private logPath(serverUuid: string): string {
    return path.join(this.logDir, `${serverUuid}.log`);
  }
}
