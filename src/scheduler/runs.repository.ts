import type { ExpressionBuilder } from 'kysely';
import type { Queryable } from '../db/database.js';
import type { ServerStatus, Tables, TaskRow } from '../db/schema.js';
import { recordActivities, type Actor } from '../modules/activity/activity.recorder.js';
import { ONE, ZERO } from './sql-flags.js';

/**
 * A run's progress: each finished task moves the run's cursor, writes its
 * event and queues the next task, or ends the run. Every write is fenced by
 * the run number (docs/SCHEDULER.md), so a holder that lost its claim cannot
 * write over its successor.
 */

export async function markTasksQueued(db: Queryable, taskIds: number[]): Promise<void> {
  if (taskIds.length === 0) return;
  await db.updateTable('tasks').set({ is_queued: 1 }).where('id', 'in', taskIds).where('is_queued', '=', ZERO).execute();
}

/** The fencing condition of every progress write: still this claim, still processing. */
function ownRun(scheduleId: number, runNumber: number) {
  return (eb: ExpressionBuilder<Tables, 'schedules'>) =>
    eb.and([eb('id', '=', scheduleId), eb('run_number', '=', runNumber), eb('is_processing', '=', ONE)]);
}

/** A task a run has just carried out, to be recorded (see recordSteps). */
export interface FinishedStep {
  scheduleId: number;
  runNumber: number;
  serverId: number;
  taskId: number;
  sequenceId: number;
  continueOnFailure: boolean;
  failed: boolean;
  /** The event the task earned (none when it failed). */
  event: { event: string; properties: Record<string, unknown> } | null;
}

/** What the run does next: its next task (already queued), nothing (the run ended), or stop (no longer its run). */
export type StepOutcome = { kind: 'next'; task: TaskRow; stepAt: number } | { kind: 'closed' } | { kind: 'lost' };

/**
 * `id IN (...) AND ((id = a AND run_number = ra) OR ...)`: these exact claims,
 * still processing. Keep the list short (SQLite parses an OR chain as a tree of
 * that depth; its limit is 1000): see STEP_BATCH in runs.ts.
 */
function ownRuns(runs: { scheduleId: number; runNumber: number }[]) {
  return (eb: ExpressionBuilder<Tables, 'schedules'>) =>
    eb.and([
      eb(
        'id',
        'in',
        runs.map((r) => r.scheduleId),
      ),
      eb('is_processing', '=', ONE),
      eb.or(runs.map((r) => eb.and([eb('id', '=', r.scheduleId), eb('run_number', '=', r.runNumber)]))),
    ]);
}

/**
 * Records finished tasks of many runs in one transaction (the caller's), a
 * handful of statements whatever their number: for each step, still this
 * claim's? then its cursor moves past the task, its event is written, and the
 * run either queues its next task or ends (a failure without
 * continue_on_failure, no next task, or a server no longer ready). Runs that
 * are no longer their claim's (deleted, toggled, taken over) change nothing.
 *
 * The first statement writes (SQLite's write lock, see withClaimableCandidates);
 * after it, the rows it matched are this transaction's until commit.
 */
export async function recordSteps(
  db: Queryable,
  steps: FinishedStep[],
  at: { now: number; leaseExpiresAt: number; actor: Actor },
): Promise<StepOutcome[]> {
  const key = (s: { scheduleId: number; runNumber: number }) => `${s.scheduleId}:${s.runNumber}`;
  // 1. Fence and cursor, one statement per cursor value (a burst shares one).
  const ours = new Set<string>();
  const bySequence = new Map<number, FinishedStep[]>();
  for (const step of steps) {
    const group = bySequence.get(step.sequenceId);
    if (group) group.push(step);
    else bySequence.set(step.sequenceId, [step]);
  }
  for (const [sequenceId, group] of bySequence) {
    const rows = await db
      .updateTable('schedules')
      .set({ run_cursor: sequenceId, run_step_at: at.now, lease_expires_at: at.leaseExpiresAt })
      .where(ownRuns(group))
      .returning(['id', 'run_number'])
      .execute();
    for (const row of rows) ours.add(key({ scheduleId: row.id, runNumber: row.run_number }));
  }
  const mine = steps.filter((s) => ours.has(key(s)));

  // 2. The events, in one statement.
  await recordActivities(
    db,
    mine.flatMap((s) =>
      s.event
        ? [{ serverId: s.serverId, event: s.event.event, actor: at.actor, properties: s.event.properties, timestamp: at.now }]
        : [],
    ),
  );

  // 3. What comes next for the runs that go on.
  const goingOn = mine.filter((s) => !s.failed || s.continueOnFailure);
  const tasks = goingOn.length
    ? await db
        .selectFrom('tasks')
        .selectAll()
        .where('schedule_id', 'in', [...new Set(goingOn.map((s) => s.scheduleId))])
        .orderBy('schedule_id')
        .orderBy('sequence_id')
        .orderBy('id')
        .execute()
    : [];
  const servers = goingOn.length
    ? await db
        .selectFrom('servers')
        .select(['id', 'status'])
        .where('id', 'in', [...new Set(goingOn.map((s) => s.serverId))])
        .execute()
    : [];
  const ready = new Set(servers.filter((s) => s.status === null).map((s) => s.id));
  const tasksBySchedule = new Map<number, TaskRow[]>();
  for (const task of tasks) {
    const list = tasksBySchedule.get(task.schedule_id);
    if (list) list.push(task);
    else tasksBySchedule.set(task.schedule_id, [task]);
  }
  const next = new Map<string, TaskRow>();
  for (const step of goingOn) {
    const task = tasksBySchedule.get(step.scheduleId)?.find((t) => t.sequence_id > step.sequenceId);
    if (task && ready.has(step.serverId)) next.set(key(step), task);
  }

  // 4. Runs that end: idle again, last_run_at now, claim and cursor cleared, nothing queued.
  const ending = mine.filter((s) => !next.has(key(s)));
  if (ending.length > 0) {
    const ids = ending.map((s) => s.scheduleId);
    await db
      .updateTable('schedules')
      .set({
        is_processing: 0,
        last_run_at: at.now,
        claimed_by: null,
        lease_expires_at: null,
        run_cursor: null,
        run_step_at: null,
      })
      .where('id', 'in', ids)
      .execute();
    await db.updateTable('tasks').set({ is_queued: 0 }).where('schedule_id', 'in', ids).where('is_queued', '=', ONE).execute();
  }
  // 5. Runs that go on: the finished task leaves the queue, the next one joins it.
  const continuing = mine.filter((s) => next.has(key(s)));
  if (continuing.length > 0) {
    await db
      .updateTable('tasks')
      .set({ is_queued: 0 })
      .where(
        'id',
        'in',
        continuing.map((s) => s.taskId),
      )
      .execute();
    await markTasksQueued(
      db,
      continuing.map((s) => next.get(key(s))!.id),
    );
  }
  return steps.map((s): StepOutcome => {
    if (!ours.has(key(s))) return { kind: 'lost' };
    const task = next.get(key(s));
    return task ? { kind: 'next', task, stepAt: at.now } : { kind: 'closed' };
  });
}

/** The task after `cursor` in sequence order, if any. */
export async function findTaskAfter(db: Queryable, scheduleId: number, cursor: number): Promise<TaskRow | undefined> {
  return db
    .selectFrom('tasks')
    .selectAll()
    .where('schedule_id', '=', scheduleId)
    .where('sequence_id', '>', cursor)
    .orderBy('sequence_id')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
}

/** What a run re-reads after waiting: is it still ours, where is it, and is its server ready. */
export async function findRunState(
  db: Queryable,
  run: { scheduleId: number; runNumber: number },
): Promise<{ cursor: number; stepAt: number; serverStatus: ServerStatus | null } | undefined> {
  const row = await db
    .selectFrom('schedules')
    .innerJoin('servers', 'servers.id', 'schedules.server_id')
    .select(['schedules.run_cursor', 'schedules.run_step_at', 'servers.status'])
    .where('schedules.id', '=', run.scheduleId)
    .where('schedules.run_number', '=', run.runNumber)
    .where('schedules.is_processing', '=', ONE)
    .executeTakeFirst();
  if (!row) return undefined;
  return { cursor: row.run_cursor ?? 0, stepAt: row.run_step_at ?? 0, serverStatus: row.status };
}

/**
 * Ends a run: idle again, last_run_at now, claim and cursor cleared, no task
 * queued. False when the run was no longer this claim's (then nothing changes).
 */
export async function closeRun(db: Queryable, run: { scheduleId: number; runNumber: number }, now: number): Promise<boolean> {
  const result = await db
    .updateTable('schedules')
    .set({
      is_processing: 0,
      last_run_at: now,
      claimed_by: null,
      lease_expires_at: null,
      run_cursor: null,
      run_step_at: null,
    })
    .where(ownRun(run.scheduleId, run.runNumber))
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return false;
  await db
    .updateTable('tasks')
    .set({ is_queued: 0 })
    .where('schedule_id', '=', run.scheduleId)
    .where('is_queued', '=', ONE)
    .execute();
  return true;
}

/** After a run found itself cancelled: clear the queued marks it left, unless a newer run owns the schedule. */
export async function clearQueuedUnlessProcessing(db: Queryable, scheduleId: number): Promise<void> {
  await db
    .updateTable('tasks')
    .set({ is_queued: 0 })
    .where('schedule_id', '=', scheduleId)
    .where('is_queued', '=', ONE)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('schedules')
            .select('schedules.id')
            .where('schedules.id', '=', scheduleId)
            .where('schedules.is_processing', '=', ONE),
        ),
      ),
    )
    .execute();
}
