import type { Queryable } from '../db/database.js';
import type { ScheduleRow } from '../db/schema.js';
import { recordActivities, SYSTEM_ACTOR } from '../modules/activity/activity.recorder.js';
import { cronFieldsOf } from '../timing/cron.js';
import { claimRuns, queueFirstTasks, setNextRunTimes } from './claim.repository.js';
import type { SchedulerContext } from './context.js';
import {
  advancePastSkippedRun,
  dropRunRequest,
  withClaimableCandidates,
  type CandidateKind,
  type RunCandidate,
} from './due.repository.js';
import { activeRunOf, type RunDriver } from './runs.js';

/**
 * Starting runs (docs/SCHEDULER.md "One pass", steps 2 and 3): requested runs
 * first, then due ones, batch after batch; what cannot run is skipped and has
 * its next_run_at moved on.
 */

type CronColumns = Pick<ScheduleRow, 'cron_minute' | 'cron_hour' | 'cron_day_of_month' | 'cron_month' | 'cron_day_of_week'>;
const cronKey = (row: CronColumns) =>
  [row.cron_minute, row.cron_hour, row.cron_day_of_month, row.cron_month, row.cron_day_of_week].join(' ');

/** Claims (or skips) everything requested or due, and launches the claimed runs. True when anything changed. */
export async function claimDueRuns(ctx: SchedulerContext, runs: RunDriver): Promise<boolean> {
  let progressed = false;
  for (const kind of ['requested', 'due'] as const) {
    // Batch after batch, until a batch is short (nothing more due) or changed nothing.
    for (;;) {
      const now = ctx.clock.now();
      const pick: CandidateKind = kind === 'due' ? { kind, now } : { kind };
      const result = await withClaimableCandidates(ctx.db, ctx.dialect, pick, ctx.batchSize, (trx, candidates) =>
        claimOrSkip(ctx, trx, candidates, now),
      );
      if (!result) break;
      for (const started of result.started) runs.launch(started.run, started.task);
      if (result.changed > 0) progressed = true;
      if (result.seen < ctx.batchSize || result.changed === 0) break;
    }
  }
  return progressed;
}

/**
 * Inside the claim transaction: skip what cannot run (moving next_run_at on),
 * claim the rest, set their next_run_at, log `server:schedule.run` for each
 * and queue their first task. The runs start after commit.
 */
async function claimOrSkip(ctx: SchedulerContext, trx: Queryable, candidates: RunCandidate[], now: number) {
  const online = await onlineStates(ctx, candidates);
  const nextRun = nextRunMemo(ctx, now);
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
    instance: ctx.instanceId,
    leaseExpiresAt: now + ctx.leaseMs,
  });
  if (claimed.length === 0) return { seen: candidates.length, changed, started: [] };
  // SQLite read the candidates before this transaction: an expression changed in between
  // (rare) gets its next time from the expression as it is now.
  const candidateById = new Map(candidates.map((c) => [c.id, c]));
  const changedExpression = claimed.filter((row) => cronKey(row) !== cronKey(candidateById.get(row.id)!));
  if (changedExpression.length > 0) await setNextRunTimes(trx, new Map(changedExpression.map((row) => [row.id, nextRun(row)])));

  // The activity recorder's bulk write: a claim of a hundred runs writes its hundred
  // entries with a handful of statements, in the claim's transaction.
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

  const started = claimed.map((row) => ({
    run: activeRunOf(row, candidateById.get(row.id)!, ctx.clock.now()),
    task: firstTasks.get(row.id),
  }));
  return { seen: candidates.length, changed: changed + claimed.length, started };
}

/** Daemon states of the only_when_online candidates: true when running or starting. */
async function onlineStates(ctx: SchedulerContext, candidates: RunCandidate[]): Promise<Map<number, boolean>> {
  const states = new Map<number, boolean>();
  await Promise.all(
    candidates
      .filter((c) => c.only_when_online === 1 && c.server_status === null && c.has_tasks)
      .map(async (c) => {
        try {
          const state = await ctx.daemon.state({
            uuid: c.server_uuid,
            startup: c.server_startup,
            stopCommand: c.server_stop_command,
          });
          states.set(c.id, state === 'running' || state === 'starting');
        } catch (err) {
          ctx.log.warn({ err, schedule: c.id }, 'could not read the server state; an only-when-online run is skipped');
          states.set(c.id, false);
        }
      }),
  );
  return states;
}

/** next_run_at for rows claimed at `now`; schedules sharing an expression compute it once. */
function nextRunMemo(ctx: SchedulerContext, now: number) {
  const memo = new Map<string, number | null>();
  return (row: Pick<ScheduleRow, 'id'> & CronColumns) => {
    const key = cronKey(row);
    const known = memo.get(key);
    if (known !== undefined) return known;
    let next: number | null;
    try {
      const date = ctx.cron.nextRunAfter(cronFieldsOf(row), new Date(now), ctx.config.timezone);
      next = date ? date.getTime() : null;
    } catch (err) {
      ctx.log.warn({ err, schedule: row.id }, 'stored cron expression cannot be evaluated; the schedule will not run again');
      next = null;
    }
    memo.set(key, next);
    return next;
  };
}
