import type { AppDeps } from '../deps.js';
import type { Queryable } from '../db/database.js';
import type { ScheduleRow, TaskRow } from '../db/schema.js';
import { recordActivity, SYSTEM_ACTOR } from '../modules/activity/activity.recorder.js';
import { cronFieldsOf } from '../timing/cron.js';
import { nextRunAfter } from '../timing/cron.js';
import { claimantIsDead, instanceIdentity, type InstanceIdentity } from './instance.js';
import { silentLogger, type SchedulerLogger } from '../timing/logger.js';
import { notifySchedulesChanged, ScheduleChangeListener } from '../timing/wakeup.js';
import {
  advancePastSkippedRun,
  claimRuns,
  clearQueuedUnlessProcessing,
  closeRun,
  dropRunRequest,
  findClaimants,
  findOrphanedRuns,
  findRunState,
  findTaskAfter,
  findWakeTimes,
  markTasksQueued,
  queueFirstTasks,
  recordActivities,
  recordSteps,
  releaseLeases,
  renewLeases,
  setNextRunTimes,
  takeOverRun,
  withClaimableCandidates,
  type CandidateKind,
  type FinishedStep,
  type RunCandidate,
  type StepOutcome,
} from './scheduler.repository.js';
import { Batcher } from './batcher.js';
import { Sleeper, realTimers, sleepUnlessAborted, type Timers } from './sleeper.js';
import { performTask, type RunServer, type TaskDeps } from './task-actions.js';

/**
 * The scheduler (SPEC 7; the design is in docs/SCHEDULER.md).
 *
 * State lives in the database, never only in a timer: a run is a claim on the
 * schedule's row (instance, lease, run number, cursor), so that any instance can
 * see it, renew it, resume it or close it. This process sleeps until the
 * earliest thing that can need it — the earliest next_run_at, a pending manual
 * execution, a foreign lease running out — or until woken (wake() in this
 * process, LISTEN/NOTIFY from others on PostgreSQL, a fallback poll).
 */

export interface SchedulerHandle {
  /** Look again now (schedules changed). */
  wake(): void;
  /** Stops claiming, lets a task in flight finish, and hands unfinished runs over. */
  stop(): Promise<void>;
  /** One pass now (recover orphaned runs, claim what is due), resolved when it is done. */
  tick(): Promise<void>;
  /** Resolves once none of this instance's runs is in progress. */
  idle(): Promise<void>;
  /** The id this instance stamps its claims with. */
  readonly instanceId: string;
}

export interface SchedulerOptions {
  /** A label for this instance's claims (host and pid are added). */
  instanceId?: string | undefined;
  logger?: SchedulerLogger | undefined;
  /** How long a claim holds without renewal (renewed every third of it). Default 30 s. */
  leaseMs?: number | undefined;
  /** The fallback poll. Default 5 s, or 30 s on PostgreSQL while LISTEN works. */
  pollIntervalMs?: number | undefined;
  /** Schedules claimed per transaction. Default 200. */
  batchSize?: number | undefined;
  /** Real-time waiting (tests may swap it). */
  timers?: Timers | undefined;
  /** LISTEN for other processes' changes (PostgreSQL). Default true. */
  listen?: boolean | undefined;
}

export type SchedulerDeps = Pick<AppDeps, 'db' | 'dialect' | 'config' | 'clock' | 'daemon'> &
  Partial<Pick<AppDeps, 'jobs' | 'onSchedulesChanged'>> &
  SchedulerOptions;

export function startScheduler(deps: SchedulerDeps): SchedulerHandle {
  const scheduler = new Scheduler(deps);
  scheduler.start();
  return scheduler;
}

const DEFAULT_LEASE_MS = 30_000;
const DEFAULT_BATCH = 200;
const SQLITE_POLL_MS = 5_000;
const LISTENING_POLL_MS = 30_000;
/** A pass that found work it could not take (another instance holds it) looks again this soon. */
const RETRY_MS = 250;
/**
 * An orphaned run is resumed only if its holder was alive less than this long
 * ago (the longest time_offset): a restart after a long outage does not fire a
 * run's remaining tasks at a time nobody expects any more.
 */
const RESUME_WINDOW_MS = 15 * 60_000;

type CronColumns = Pick<ScheduleRow, 'cron_minute' | 'cron_hour' | 'cron_day_of_month' | 'cron_month' | 'cron_day_of_week'>;
const cronKey = (row: CronColumns) => [row.cron_minute, row.cron_hour, row.cron_day_of_month, row.cron_month, row.cron_day_of_week].join(' ');

interface ActiveRun {
  readonly key: string;
  readonly scheduleId: number;
  readonly runNumber: number;
  readonly name: string;
  readonly server: RunServer;
  cursor: number;
  stepAt: number;
}

/**
 * Finished tasks of concurrent runs are recorded together, up to this many per
 * transaction: a burst of ten thousand runs costs a few hundred statements and
 * commits, not tens of thousands (see recordSteps for why not more).
 */
const STEP_BATCH = 200;

class Scheduler implements SchedulerHandle {
  readonly instanceId: string;
  private readonly identity: InstanceIdentity;
  private readonly log: SchedulerLogger;
  private readonly leaseMs: number;
  private readonly batchSize: number;
  private readonly timers: Timers;
  private readonly sleeper: Sleeper;
  private readonly abort = new AbortController();
  private readonly listener: ScheduleChangeListener | undefined;
  private readonly runs = new Map<string, { run: ActiveRun; done: Promise<void> }>();
  private readonly taskDeps: TaskDeps;
  private readonly steps: Batcher<FinishedStep, StepOutcome>;
  private stopping = false;
  private stopped: Promise<void> | undefined;
  private wakeRequested = false;
  private loopDone: Promise<void> = Promise.resolve();
  private pendingTicks: (() => void)[] = [];
  private renewTimer: NodeJS.Timeout | undefined;
  private deadClaimants: string[] = [];
  private lastClaimantScan = -Infinity;

  constructor(private readonly deps: SchedulerDeps) {
    this.identity = instanceIdentity(deps.instanceId);
    this.instanceId = this.identity.id;
    this.log = deps.logger ?? silentLogger;
    this.leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
    this.batchSize = deps.batchSize ?? DEFAULT_BATCH;
    this.timers = deps.timers ?? realTimers;
    this.sleeper = new Sleeper(this.timers);
    this.taskDeps = { db: deps.db, clock: deps.clock, daemon: deps.daemon, config: deps.config };
    this.steps = new Batcher(STEP_BATCH, (batch) => {
      const now = deps.clock.now();
      return deps.db
        .transaction()
        .execute((trx) => recordSteps(trx, batch, { now, leaseExpiresAt: now + this.leaseMs, actor: SYSTEM_ACTOR }));
    });
    if (deps.dialect === 'postgres' && (deps.listen ?? true)) {
      this.listener = new ScheduleChangeListener(deps.config.databaseUrl, () => this.wake(), this.log);
    }
  }

  start() {
    this.loopDone = this.loop();
    this.renewTimer = setInterval(() => void this.renew(), Math.max(50, Math.floor(this.leaseMs / 3)));
    this.renewTimer.unref();
  }

  wake(): void {
    this.wakeRequested = true;
    this.sleeper.interrupt();
  }

  tick(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      this.pendingTicks.push(resolve);
      this.wake();
    });
  }

  async idle(): Promise<void> {
    while (this.runs.size > 0) await Promise.allSettled([...this.runs.values()].map((r) => r.done));
  }

  stop(): Promise<void> {
    this.stopped ??= this.shutdown();
    return this.stopped;
  }

  private async shutdown(): Promise<void> {
    this.stopping = true;
    this.abort.abort();
    this.sleeper.interrupt();
    if (this.renewTimer) clearInterval(this.renewTimer);
    await this.loopDone;
    // Runs waiting out a time_offset return at once; a task being carried out finishes and is recorded.
    await this.idle();
    try {
      const released = await releaseLeases(this.deps.db, this.instanceId, this.deps.clock.now() - 1);
      if (released > 0) {
        this.log.info({ runs: released }, 'scheduler stopped: unfinished runs handed over');
        await notifySchedulesChanged(this.deps.db, this.deps.dialect);
      }
    } catch (err) {
      this.log.warn({ err }, 'scheduler could not hand its runs over; their leases will expire');
    }
    await this.listener?.stop();
    for (const resolve of this.pendingTicks.splice(0)) resolve();
  }

  // ------------------------------------------------------------------ the loop

  private async loop(): Promise<void> {
    await this.listener?.start();
    let failures = 0;
    while (!this.stopping) {
      const ticks = this.pendingTicks.splice(0);
      this.wakeRequested = false;
      let progressed = false;
      try {
        progressed = await this.pass();
        failures = 0;
      } catch (err) {
        failures += 1;
        this.log.error({ err }, 'scheduler pass failed');
      }
      for (const resolve of ticks) resolve();
      if (this.stopping) break;
      if (this.wakeRequested) continue;
      let delay: number;
      try {
        delay = failures > 0 ? Math.min(30_000, 500 * 2 ** failures) : await this.delayUntilNextWork(progressed);
      } catch (err) {
        this.log.error({ err }, 'scheduler could not read its next wake-up');
        delay = 1_000;
      }
      // No await between this check and the sleep: a wake() cannot fall in between.
      if (this.wakeRequested || this.stopping) continue;
      await this.sleeper.sleep(delay);
    }
    for (const resolve of this.pendingTicks.splice(0)) resolve();
  }

  private pollIntervalMs(): number {
    if (this.deps.pollIntervalMs !== undefined) return this.deps.pollIntervalMs;
    return this.listener?.listening ? LISTENING_POLL_MS : SQLITE_POLL_MS;
  }

  /** Recover orphaned runs, then claim (or skip) everything due. True when anything changed. */
  private async pass(): Promise<boolean> {
    // Starting runs comes first: while a burst is being claimed, finished tasks wait
    // (and are then recorded in fuller batches) instead of competing for the database.
    const release = this.steps.hold();
    try {
      return await this.claimPass();
    } finally {
      release();
    }
  }

  private async claimPass(): Promise<boolean> {
    if (performance.now() - this.lastClaimantScan >= this.pollIntervalMs()) await this.scanClaimants();
    let progressed = await this.recoverOrphans();
    for (const kind of ['requested', 'due'] as const) {
      // Batch after batch, until a batch is short (nothing more due) or changed nothing.
      for (;;) {
        const now = this.deps.clock.now();
        const pick: CandidateKind = kind === 'due' ? { kind, now } : { kind };
        const result = await withClaimableCandidates(this.deps.db, this.deps.dialect, pick, this.batchSize, (trx, candidates) =>
          this.claimOrSkip(trx, candidates, now),
        );
        if (!result) break;
        for (const started of result.started) this.launch(started.run, started.task);
        if (result.changed > 0) progressed = true;
        if (result.seen < this.batchSize || result.changed === 0) break;
      }
    }
    return progressed;
  }

  private async delayUntilNextWork(progressed: boolean): Promise<number> {
    const wake = await findWakeTimes(this.deps.db, this.instanceId);
    const now = this.deps.clock.now();
    let target = now + this.pollIntervalMs();
    if (wake.nextDue !== null) target = Math.min(target, wake.nextDue);
    if (wake.requested !== null) target = Math.min(target, now);
    if (wake.leaseExpiry !== null) target = Math.min(target, wake.leaseExpiry);
    const delay = target - now;
    // Due work that this pass could not take is held by another instance: give it a moment.
    if (delay <= 0 && !progressed) return RETRY_MS;
    return Math.max(0, delay);
  }

  // ------------------------------------------------------------------ claiming

  /**
   * Inside the claim transaction: skip what cannot run (moving next_run_at on),
   * claim the rest, set their next_run_at, log `server:schedule.run` for each
   * and queue their first task. The runs start after commit.
   */
  private async claimOrSkip(trx: Queryable, candidates: RunCandidate[], now: number) {
    const online = await this.onlineStates(candidates);
    const nextRun = this.nextRunMemo(now);
    let changed = 0;
    const claimable: RunCandidate[] = [];
    for (const candidate of candidates) {
      const ready = candidate.server_status === null && candidate.has_tasks;
      if (ready && online.get(candidate.id) !== false) {
        claimable.push(candidate);
        continue;
      }
      // Skipped: nothing is logged and last_run_at stays; a pending manual request is dropped.
      if (await dropRunRequest(trx, candidate)) changed += 1;
      if (candidate.is_active === 1 && candidate.next_run_at !== null && candidate.next_run_at <= now) {
        if (await advancePastSkippedRun(trx, candidate, nextRun(candidate))) changed += 1;
      }
    }

    // Every run start counts next_run_at from now: missed times run once, not once each.
    const claimed = await claimRuns(trx, new Map(claimable.map((c) => [c.id, nextRun(c)])), {
      now,
      instance: this.instanceId,
      leaseExpiresAt: now + this.leaseMs,
    });
    if (claimed.length === 0) return { seen: candidates.length, changed, started: [] };
    // SQLite read the candidates before this transaction: an expression changed in between
    // (rare) gets its next time from the expression as it is now.
    const candidateById = new Map(candidates.map((c) => [c.id, c]));
    const changedExpression = claimed.filter((row) => cronKey(row) !== cronKey(candidateById.get(row.id)!));
    if (changedExpression.length > 0) await setNextRunTimes(trx, new Map(changedExpression.map((row) => [row.id, nextRun(row)])));

    await recordActivities(
      trx,
      claimed.map((row) => ({
        serverId: row.server_id,
        event: 'server:schedule.run',
        actor: SYSTEM_ACTOR,
        properties: { name: row.name },
        timestamp: now,
      })),
    );
    const firstTasks = await queueFirstTasks(
      trx,
      claimed.map((row) => row.id),
    );

    const started = claimed.map((row) => ({ run: this.runOf(row, candidateById.get(row.id)!), task: firstTasks.get(row.id) }));
    return { seen: candidates.length, changed: changed + claimed.length, started };
  }

  /** Daemon states of the only_when_online candidates: true when running or starting. */
  private async onlineStates(candidates: RunCandidate[]): Promise<Map<number, boolean>> {
    const states = new Map<number, boolean>();
    await Promise.all(
      candidates
        .filter((c) => c.only_when_online === 1 && c.server_status === null && c.has_tasks)
        .map(async (c) => {
          try {
            const state = await this.deps.daemon.state({ uuid: c.server_uuid, startup: c.server_startup, stopCommand: c.server_stop_command });
            states.set(c.id, state === 'running' || state === 'starting');
          } catch (err) {
            this.log.warn({ err, schedule: c.id }, 'could not read the server state; an only-when-online run is skipped');
            states.set(c.id, false);
          }
        }),
    );
    return states;
  }

  /** next_run_at for rows claimed at `now`; schedules sharing an expression compute it once. */
  private nextRunMemo(now: number) {
    const memo = new Map<string, number | null>();
    return (row: Pick<ScheduleRow, 'id' | 'cron_minute' | 'cron_hour' | 'cron_day_of_month' | 'cron_month' | 'cron_day_of_week'>) => {
      const key = cronKey(row);
      const known = memo.get(key);
      if (known !== undefined) return known;
      let next: number | null;
      try {
        const date: Date | null = nextRunAfter(cronFieldsOf(row as ScheduleRow), new Date(now), this.deps.config.timezone);
        next = date ? date.getTime() : null;
      } catch (err) {
        this.log.warn({ err, schedule: row.id }, 'stored cron expression cannot be evaluated; the schedule will not run again');
        next = null;
      }
      memo.set(key, next);
      return next;
    };
  }

  private runOf(row: ScheduleRow, server: { server_uuid: string; server_startup: string | null; server_stop_command: string | null }): ActiveRun {
    return {
      key: `${row.id}:${row.run_number}`,
      scheduleId: row.id,
      runNumber: row.run_number,
      name: row.name,
      server: { id: row.server_id, uuid: server.server_uuid, startup: server.server_startup, stopCommand: server.server_stop_command },
      cursor: row.run_cursor ?? 0,
      stepAt: row.run_step_at ?? this.deps.clock.now(),
    };
  }

  // ------------------------------------------------------------------ running

  private launch(run: ActiveRun, firstTask: TaskRow | undefined) {
    const done = this.drive(run, firstTask)
      .catch((err: unknown) => this.log.error({ err, schedule: run.scheduleId }, 'schedule run failed'))
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
    let next = task;
    let failures = 0;
    while (!this.stopping) {
      try {
        if (!next) {
          const state = await findRunState(this.deps.db, run);
          if (!state) return await this.lost(run);
          run.cursor = state.cursor;
          run.stepAt = state.stepAt;
          if (state.serverStatus !== null) return await this.close(run, 'server not ready');
          next = await findTaskAfter(this.deps.db, run.scheduleId, run.cursor);
          if (!next) return await this.close(run, 'done');
          if (next.is_queued !== 1) await markTasksQueued(this.deps.db, [next.id]);
        }
        const wait = run.stepAt + next.time_offset * 1000 - this.deps.clock.now();
        if (wait > 0) {
          await sleepUnlessAborted(this.timers, wait, this.abort.signal);
          // The task may have been edited, moved or deleted while we waited.
          next = undefined;
          continue;
        }
        const current = next;
        next = undefined;
        const outcome = await performTask(this.taskDeps, run.server, current);
        if (!outcome.ok) {
          this.log.warn({ err: outcome.error, schedule: run.scheduleId, task: current.id, action: current.action }, 'scheduled task failed');
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
        this.log.error({ err, schedule: run.scheduleId }, 'schedule run step failed; retrying');
        await sleepUnlessAborted(this.timers, Math.min(30_000, 500 * 2 ** failures), this.abort.signal);
      }
    }
  }

  private async close(run: ActiveRun, why: string): Promise<void> {
    const now = this.deps.clock.now();
    const closed = await this.deps.db.transaction().execute((trx) => closeRun(trx, run, now));
    if (!closed) return this.lost(run);
    this.log.debug({ schedule: run.scheduleId, why }, 'schedule run ended');
  }

  /** The run is no longer ours (deleted, toggled, taken over): stop quietly, tidy what it queued. */
  private async lost(run: ActiveRun): Promise<void> {
    this.log.info({ schedule: run.scheduleId }, 'schedule run is no longer held by this instance; stopping it');
    await clearQueuedUnlessProcessing(this.deps.db, run.scheduleId);
  }

  // ------------------------------------------------------------------ leases and recovery

  private async renew(): Promise<void> {
    if (this.runs.size === 0 || this.stopping) return;
    const ids = [...new Set([...this.runs.values()].map((r) => r.run.scheduleId))];
    try {
      await renewLeases(this.deps.db, this.instanceId, ids, this.deps.clock.now() + this.leaseMs);
    } catch (err) {
      this.log.warn({ err }, 'could not renew run leases');
    }
  }

  /** Which instances holding runs died on this machine (their runs need not wait for the lease). */
  private async scanClaimants(): Promise<void> {
    this.lastClaimantScan = performance.now();
    const claimants = await findClaimants(this.deps.db);
    this.deadClaimants = claimants.filter((c) => c !== this.instanceId && claimantIsDead(c, this.identity));
  }

  /**
   * Runs whose holder is gone. Resumed from their cursor (logged
   * `server:schedule.resume`) when the holder was alive recently and the
   * schedule's next time has not come yet; otherwise closed (logged
   * `server:schedule.abandon`), and a due time runs afresh.
   */
  private async recoverOrphans(): Promise<boolean> {
    const now = this.deps.clock.now();
    const orphans = await findOrphanedRuns(this.deps.db, {
      now,
      self: this.instanceId,
      deadClaimants: this.deadClaimants,
      limit: this.batchSize,
    });
    let progressed = false;
    for (const orphan of orphans) {
      const superseded = orphan.is_active === 1 && orphan.next_run_at !== null && orphan.next_run_at <= now;
      const stale = orphan.lease_expires_at !== null && now - orphan.lease_expires_at > RESUME_WINDOW_MS;
      const unknown = orphan.claimed_by === null || orphan.run_step_at === null;
      const abandon = superseded || stale || unknown;
      const taken = await this.deps.db.transaction().execute(async (trx) => {
        const row = await takeOverRun(trx, orphan, { instance: this.instanceId, leaseExpiresAt: now + this.leaseMs });
        if (!row) return undefined;
        if (abandon) await closeRun(trx, { scheduleId: row.id, runNumber: row.run_number }, now);
        await recordActivity(trx, {
          serverId: row.server_id,
          event: abandon ? 'server:schedule.abandon' : 'server:schedule.resume',
          actor: SYSTEM_ACTOR,
          properties: { name: row.name },
          timestamp: now,
        });
        return row;
      });
      if (!taken) continue;
      progressed = true;
      this.log.info(
        { schedule: taken.id, previousHolder: orphan.claimed_by, cursor: orphan.run_cursor },
        abandon ? 'interrupted schedule run closed' : 'interrupted schedule run resumed',
      );
      if (!abandon) this.launch(this.runOf(taken, orphan), undefined);
    }
    return progressed;
  }
}
