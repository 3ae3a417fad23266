import type { ScheduleRow, TaskRow } from '../db/schema.js';
import { SYSTEM_ACTOR } from '../modules/activity/activity.recorder.js';
import { Batcher } from './batcher.js';
import type { SchedulerContext } from './context.js';
import { renewLeases } from './recovery.repository.js';
import {
  clearQueuedUnlessProcessing,
  closeRun,
  findRunState,
  findTaskAfter,
  markTasksQueued,
  recordSteps,
  type FinishedStep,
  type StepOutcome,
} from './runs.repository.js';
import { sleepUnlessAborted } from './sleeper.js';
import { performTask, type RunServer, type TaskDeps } from './task-actions.js';

/**
 * Runs in progress in this instance: each claimed (or resumed) run is driven
 * task by task to its end, its lease renewed meanwhile (docs/SCHEDULER.md
 * "Running the tasks").
 */

export interface ActiveRun {
  readonly key: string;
  readonly scheduleId: number;
  readonly runNumber: number;
  readonly name: string;
  readonly server: RunServer;
  cursor: number;
  stepAt: number;
}

/** The server columns a run needs to reach the daemon. */
export interface RunServerColumns {
  server_uuid: string;
  server_startup: string | null;
  server_stop_command: string | null;
}

/** A run as its schedule row says it is, just after this instance claimed or took it over. */
export function activeRunOf(row: ScheduleRow, server: RunServerColumns, now: number): ActiveRun {
  return {
    key: `${row.id}:${row.run_number}`,
    scheduleId: row.id,
    runNumber: row.run_number,
    name: row.name,
    server: {
      id: row.server_id,
      uuid: server.server_uuid,
      startup: server.server_startup,
      stopCommand: server.server_stop_command,
    },
    cursor: row.run_cursor ?? 0,
    stepAt: row.run_step_at ?? now,
  };
}

/**
 * Finished tasks of concurrent runs are recorded together, up to this many per
 * transaction: a burst of ten thousand runs costs a few hundred statements and
 * commits, not tens of thousands (see recordSteps for why not more).
 */
const STEP_BATCH = 200;

export class RunDriver {
  private readonly runs = new Map<string, { run: ActiveRun; done: Promise<void> }>();
  private readonly steps: Batcher<FinishedStep, StepOutcome>;
  private readonly taskDeps: TaskDeps;
  private readonly abort = new AbortController();
  private stopping = false;
  private renewTimer: NodeJS.Timeout | undefined;

  constructor(private readonly ctx: SchedulerContext) {
    this.taskDeps = {
      db: ctx.db,
      clock: ctx.clock,
      daemon: ctx.daemon,
      config: ctx.config,
      ...(ctx.serverEvents ? { serverEvents: ctx.serverEvents } : {}),
    };
    this.steps = new Batcher(STEP_BATCH, (batch) => {
      const now = ctx.clock.now();
      return ctx.db
        .transaction()
        .execute((trx) => recordSteps(trx, batch, { now, leaseExpiresAt: now + ctx.leaseMs, actor: SYSTEM_ACTOR }));
    });
  }

  /** Renews the leases of the runs in progress every third of the lease. */
  startRenewing(): void {
    this.renewTimer = setInterval(() => void this.renew(), Math.max(50, Math.floor(this.ctx.leaseMs / 3)));
    this.renewTimer.unref();
  }

  /**
   * Holds the recording of finished tasks back until the returned function is
   * called: while a burst is being claimed, finished tasks wait (and are then
   * recorded in fuller batches) instead of competing for the database.
   */
  holdSteps(): () => void {
    return this.steps.hold();
  }

  /** No new task starts after this; runs waiting out a time_offset return at once. */
  stop(): void {
    this.stopping = true;
    this.abort.abort();
    if (this.renewTimer) clearInterval(this.renewTimer);
  }

  /** Resolves once none of this instance's runs is in progress. */
  async idle(): Promise<void> {
    while (this.runs.size > 0) await Promise.allSettled([...this.runs.values()].map((r) => r.done));
  }

  launch(run: ActiveRun, firstTask: TaskRow | undefined): void {
    const done = this.drive(run, firstTask)
      .catch((err: unknown) => this.ctx.log.error({ err, schedule: run.scheduleId }, 'schedule run failed'))
      .finally(() => this.runs.delete(run.key));
    this.runs.set(run.key, { run, done });
  }

  /**
   * Carries a run to its end: each task after its time_offset, counted from
   * when the previous one finished (or the run started). `task` is the next
   * task when it was just read inside a committed transaction; otherwise the
   * run re-reads its state, because the schedule may have changed meanwhile.
   */
  private async drive(run: ActiveRun, task: TaskRow | undefined): Promise<void> {
    const { db, clock, log, timers } = this.ctx;
    let next = task;
    let failures = 0;
    while (!this.stopping) {
      try {
        if (!next) {
          const state = await findRunState(db, run);
          if (!state) return await this.lost(run);
          run.cursor = state.cursor;
          run.stepAt = state.stepAt;
          if (state.serverStatus !== null) return await this.close(run, 'server not ready');
          next = await findTaskAfter(db, run.scheduleId, run.cursor);
          if (!next) return await this.close(run, 'done');
          if (next.is_queued !== 1) await markTasksQueued(db, [next.id]);
        }
        const wait = run.stepAt + next.time_offset * 1000 - clock.now();
        if (wait > 0) {
          await sleepUnlessAborted(timers, wait, this.abort.signal);
          // The task may have been edited, moved or deleted while we waited.
          next = undefined;
          continue;
        }
        const current = next;
        next = undefined;
        const outcome = await performTask(this.taskDeps, run.server, current);
        if (!outcome.ok) {
          log.warn(
            { err: outcome.error, schedule: run.scheduleId, task: current.id, action: current.action },
            'scheduled task failed',
          );
        }
        // The cursor moves past the task in the transaction that writes its event: a
        // restarted service never repeats a task whose event was written.
        const result = await this.steps.submit({
          scheduleId: run.scheduleId,
          runNumber: run.runNumber,
          serverId: run.server.id,
          taskId: current.id,
          sequenceId: current.sequence_id,
          continueOnFailure: current.continue_on_failure === 1,
          failed: !outcome.ok,
          event: outcome.ok ? outcome.event : null,
        });
        if (result.kind === 'lost') return await this.lost(run);
        if (result.kind === 'closed') return;
        run.cursor = current.sequence_id;
        run.stepAt = result.stepAt;
        next = result.task;
        failures = 0;
      } catch (err) {
        // The database failed us: the cursor tells where to pick up once it answers again.
        failures += 1;
        next = undefined;
        log.error({ err, schedule: run.scheduleId }, 'schedule run step failed; retrying');
        await sleepUnlessAborted(timers, Math.min(30_000, 500 * 2 ** failures), this.abort.signal);
      }
    }
  }

  private async close(run: ActiveRun, why: string): Promise<void> {
    const now = this.ctx.clock.now();
    const closed = await this.ctx.db.transaction().execute((trx) => closeRun(trx, run, now));
    if (!closed) return this.lost(run);
    this.ctx.log.debug({ schedule: run.scheduleId, why }, 'schedule run ended');
  }

  /** The run is no longer ours (deleted, toggled, taken over): stop quietly, tidy what it queued. */
  private async lost(run: ActiveRun): Promise<void> {
    this.ctx.log.info({ schedule: run.scheduleId }, 'schedule run is no longer held by this instance; stopping it');
    await clearQueuedUnlessProcessing(this.ctx.db, run.scheduleId);
  }

  private async renew(): Promise<void> {
    if (this.runs.size === 0 || this.stopping) return;
    const ids = [...new Set([...this.runs.values()].map((r) => r.run.scheduleId))];
    try {
      await renewLeases(this.ctx.db, this.ctx.instanceId, ids, this.ctx.clock.now() + this.ctx.leaseMs);
    } catch (err) {
      this.ctx.log.warn({ err }, 'could not renew run leases');
    }
  }
}
