/**
 * Servers this supervisor does not run itself: another instance's, or a dead
 * instance's orphans. They are reached through their pid file, read on every
 * call: signals go to the recorded process group, console lines to the group
 * leader's standard input (see "Several instances on one machine" in
 * supervisor.ts).
 */
import type { ServerState } from '../../daemon.js';
import { writeToConsole } from './console.js';
import { ConsoleBusyError, ServerNotRunningError } from './errors.js';
import { ownerAlive } from './owner.js';
import type { PidFiles } from './pid-files.js';
import { isSpawned } from './pid-record.js';
import type { ServerLauncher } from './launcher.js';
import { endGroup, signalRecorded } from './process-group.js';
import type { StateEvents } from './state-events.js';
import { stopRequest } from './stop-request.js';
import type { ProcessLogger } from './supervisor-options.js';
import { pollDelay, sleep } from './waiting.js';

/** How long a stop waits for another instance to finish spawning a server it claimed. */
const FOREIGN_START_WAIT_MS = 10_000;

export class ForeignProcesses {
  /** Servers run by another instance that this one is stopping or killing right now (how many times over): they read `stopping`. */
  private readonly halts = new Map<string, number>();

  constructor(
    private readonly pidFiles: PidFiles,
    private readonly events: StateEvents,
    private readonly stopGraceMs: number,
    private readonly log: ProcessLogger,
    /** The supervisor's view of a server's state, told to listeners once a halt is over. */
    private readonly stateOf: (serverUuid: string) => ServerState,
    private readonly launcher: ServerLauncher,
  ) {}

  isHalting(serverUuid: string): boolean {
    return this.halts.has(serverUuid);
  }

  /**
   * Stops (or kills) a server another instance runs, or a dead instance left,
   * through its recorded process group; resolves once the group is gone.
   * Waits for a server that is still being spawned elsewhere.
   */
  async halt(serverUuid: string, how: { stopCommand: string | null } | 'kill'): Promise<void> {
    let found = await this.pidFiles.read(serverUuid);
    const deadline = Date.now() + FOREIGN_START_WAIT_MS;
    for (let attempt = 0; found?.state === 'starting'; attempt++) {
      if (Date.now() >= deadline) throw new Error(`Server ${serverUuid} is still being started by another instance.`);
      await sleep(pollDelay(attempt));
      found = await this.pidFiles.read(serverUuid);
    }
    if (found?.state !== 'running' || !isSpawned(found.record)) return;
    const { record, raw } = found;
    const logged = { serverUuid, pid: record.pid, ownerPid: record.owner?.pid };

    const halts = this.halts.get(serverUuid) ?? 0;
    this.halts.set(serverUuid, halts + 1);
    if (halts === 0) this.events.emit(serverUuid, 'stopping');
    try {
      if (how === 'kill') {
        await endGroup(record, 0, () => signalRecorded(record, 'SIGKILL'));
      } else {
        const request = stopRequest(how.stopCommand);
        const outcome = await endGroup(record, this.stopGraceMs, async () => {
          if ('line' in request) {
            try {
              await writeToConsole(record, serverUuid, request.line);
              return;
            } catch (err) {
              this.log.warn({ err, ...logged }, "could not write the stop command to the server's console; sending SIGTERM");
            }
          }
          signalRecorded(record, 'signal' in request ? request.signal : 'SIGTERM');
        });
        if (outcome === 'killed') {
          this.log.warn({ ...logged, graceMs: this.stopGraceMs }, 'server process did not stop in time; killed it');
        }
      }
      this.log.info(logged, 'stopped a server process another instance ran');
    } finally {
      const left = (this.halts.get(serverUuid) ?? 1) - 1;
      if (left > 0) this.halts.set(serverUuid, left);
      else {
        this.halts.delete(serverUuid);
        this.events.emit(serverUuid, this.stateOf(serverUuid));
      }
    }
    // A live owner removes its pid file (and container) itself once it sees its process exit.
    if (!ownerAlive(record.owner)) {
      if (record.container) await this.launcher.release(serverUuid, record);
      await this.pidFiles.remove(serverUuid, raw);
    }
  }

  async sendCommand(serverUuid: string, line: string): Promise<void> {
    if (this.halts.has(serverUuid)) throw new ServerNotRunningError(serverUuid);
    const found = await this.pidFiles.read(serverUuid);
    if (found?.state !== 'running' || !isSpawned(found.record)) throw new ServerNotRunningError(serverUuid);
    try {
      await writeToConsole(found.record, serverUuid, line);
    } catch (err) {
      if (err instanceof ConsoleBusyError) throw err;
      this.log.warn(
        { err, serverUuid, pid: found.record.pid, ownerPid: found.record.owner?.pid },
        'could not write to the console of a server process another instance runs',
      );
      throw new ServerNotRunningError(serverUuid);
    }
  }
}
