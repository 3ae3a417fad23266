/** A server process this supervisor spawned, and what can be done to it without the supervisor's bookkeeping. */
import type { ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import type { ServerState } from '../../daemon.js';
import { REAP_KILL_WAIT_MS, groupAlive, signalGroup } from './process-group.js';
import { stopRequest } from './stop-request.js';
import type { ProcessLogger, SupervisedServer } from './supervisor-options.js';
import { pollDelay, sleep } from './waiting.js';

export type LiveState = Exclude<ServerState, 'offline'>;

export interface ManagedProcess {
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
  /** Ends the periodic size check of the process's console log. */
  stopLogRotation: () => void;
  /** When the group was last SIGKILLed: from then on, waiting for it to vanish is bounded. */
  killedAt: number | undefined;
}

export function requestStop(proc: ManagedProcess, stopCommand: string | null): void {
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
    signalGroup(proc.pid, 'SIGKILL');
  } catch (err) {
    log.error({ err, serverUuid: proc.target.uuid, pid: proc.pid }, 'could not kill server process');
  }
}
