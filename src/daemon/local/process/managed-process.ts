/** A server process this supervisor spawned, and what can be done to it without the supervisor's bookkeeping. */
import type { Writable } from 'node:stream';
import type { ServerState } from '../../daemon.js';
import { REAP_KILL_WAIT_MS, groupAlive, signalRecorded, type RecordedGroup } from './process-group.js';
import type { DoneWatch } from './done-lines.js';
import { noop } from './helpers.js';
import { stopRequest } from './stop-request.js';
import type { ProcessLogger, SupervisedServer } from './supervisor-options.js';
import { pollDelay, sleep } from './waiting.js';

export type LiveState = Exclude<ServerState, 'offline'>;

export interface ManagedProcess {
  readonly target: SupervisedServer;
  /** Also the process group id: a detached child (or a container's first process) leads its own session and group. */
  readonly pid: number;
  /** The runc container it is the first process of, or null (launcher.ts). */
  readonly container: string | null;
  /** Its /proc start time, read when it was tracked: a signal never reaches a later process that got its pid. */
  readonly startTime: string | null;
  /** When it was started (Date.now()), for `/resources`' uptime. */
  readonly startedAt: number;
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
  /** Ends the periodic size check of the process's console log. */
  stopLogRotation: () => void;
  /** When the group was last SIGKILLed: from then on, waiting for it to vanish is bounded. */
  killedAt: number | undefined;
  /** While `starting`: the watch for the server's done line (done-lines.ts); cancelled at the exit. */
  doneWatch?: DoneWatch;
}

/** A new ManagedProcess: nothing recorded, exited or launched to wait for yet, no kill pending, unless given. */
export function managedProcess(
  init: Omit<ManagedProcess, 'recorded' | 'exited' | 'launched' | 'markLaunched' | 'killTimer' | 'killedAt'> &
    Partial<Pick<ManagedProcess, 'launched' | 'markLaunched'>>,
): ManagedProcess {
  return {
    recorded: Promise.resolve(),
    exited: Promise.resolve(),
    launched: Promise.resolve(),
    markLaunched: noop,
    killTimer: undefined,
    killedAt: undefined,
    ...init,
  };
}

export function requestStop(proc: ManagedProcess, stopCommand: string | null): void {
  const request = stopRequest(stopCommand);
  const stdin = proc.stdin;
  if ('line' in request && stdin?.writable) {
    stdin.write(`${request.line}\n`);
    return;
  }
  signalRecorded(recordOf(proc), 'signal' in request ? request.signal : 'SIGTERM');
}

/** What signalRecorded needs to reach every process of ours. */
export function recordOf(proc: ManagedProcess): RecordedGroup {
  return { pid: proc.pid, pgid: proc.pid, startTime: proc.startTime, container: proc.container };
}

/**
 * Waits for the group to have no live member. Unbounded until the group is
 * SIGKILLed (by the grace timer or a kill), then bounded: a process stuck in
 * the kernel must not hold a stop forever.
 */
export async function groupEnded(proc: ManagedProcess): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    if (!(await groupAlive(proc.pid))) return true;
    if (proc.killedAt !== undefined && Date.now() - proc.killedAt > REAP_KILL_WAIT_MS) return false;
    await sleep(pollDelay(attempt));
  }
}

export function killAfterGrace(proc: ManagedProcess, graceMs: number, log: ProcessLogger): void {
  log.warn({ serverUuid: proc.target.uuid, pid: proc.pid, graceMs }, 'server process did not stop in time; killing it');
  killGroup(proc, log);
}

/** SIGKILLs the group; used from timers and exit handling, so it logs instead of throwing. */
export function killGroup(proc: ManagedProcess, log: ProcessLogger): void {
  proc.killedAt = Date.now();
  try {
    signalRecorded(recordOf(proc), 'SIGKILL');
  } catch (err) {
    log.error({ err, serverUuid: proc.target.uuid, pid: proc.pid }, 'could not kill server process');
  }
}
