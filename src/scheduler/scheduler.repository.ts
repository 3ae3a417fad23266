import { sql, type ExpressionBuilder } from 'kysely';
import type { Database, DialectName, Queryable } from '../db/database.js';
import type { ScheduleRow, ServerStatus, Tables, TaskRow } from '../db/schema.js';
import { recordActivities as recordActivityEntries, type Actor } from '../modules/activity/activity.recorder.js';

/**
 * The scheduler's SQL. Every write that decides who runs what is conditional
 * (compare-and-set on the row's current state), so that two instances — two
 * processes on one SQLite file, or several services on one PostgreSQL — can
 * never both win. On PostgreSQL the claim additionally locks its rows with
 * `FOR UPDATE SKIP LOCKED`, so that instances split a burst of due schedules
 * instead of queueing behind one another's locks (withClaimableCandidates).
 *
 * Literal 0/1 predicates (sql.lit) match the partial indexes of migration 003;
 * a bound parameter would hide them from both planners.
 */

const ONE = sql.lit(1);
const ZERO = sql.lit(0);

// ---------------------------------------------------------------- sleeping

export interface WakeTimes {
  /** Earliest next_run_at of an active, idle schedule. */
  nextDue: number | null;
  /** Earliest pending manual execution. */
  requested: number | null;
  /** Earliest lease expiry of a run held by another instance. */
  leaseExpiry: number | null;
}

/** What the sleeper waits for, in one statement of three index look-ups. */
export async function findWakeTimes(db: Queryable, self: string): Promise<WakeTimes> {
  const { rows } = await sql<{ next_due: number | null; requested: number | null; lease_expiry: number | null }>`
    select
      (select min(next_run_at) from schedules where is_active = 1 and is_processing = 0) as next_due,
      (select min(run_requested_at) from schedules where run_requested_at is not null and is_processing = 0) as requested,
      (select min(lease_expires_at) from schedules where is_processing = 1 and (claimed_by is null or claimed_by <> ${self})) as lease_expiry
  `.execute(db);
  const row = rows[0];
  const num = (v: number | string | null | undefined) => (v === null || v === undefined ? null : Number(v));
  return { nextDue: num(row?.next_due), requested: num(row?.requested), leaseExpiry: num(row?.lease_expiry) };
}

// ---------------------------------------------------------------- candidates

/** A schedule that may start a run now, with what deciding needs: its server and whether it has tasks. */
export interface RunCandidate {
  id: number;
  server_id: number;
  name: string;
  cron_minute: string;
  cron_hour: string;
  cron_day_of_month: string;
  cron_month: string;
  cron_day_of_week: string;
  is_active: number;
  only_when_online: number;
  next_run_at: number | null;
  run_requested_at: number | null;
  updated_at: number;
  server_uuid: string;
  server_startup: string | null;
  server_stop_command: string | null;
  server_status: ServerStatus | null;
  has_tasks: boolean;
}

function candidates(db: Queryable) {
  return db
    .selectFrom('schedules')
    .innerJoin('servers', 'servers.id', 'schedules.server_id')
    .select([
      'schedules.id',
      'schedules.server_id',
      'schedules.name',
      'schedules.cron_minute',
      'schedules.cron_hour',
      'schedules.cron_day_of_month',
      'schedules.cron_month',
      'schedules.cron_day_of_week',
      'schedules.is_active',
      'schedules.only_when_online',
      'schedules.next_run_at',
      'schedules.run_requested_at',
      'schedules.updated_at',
      'servers.uuid as server_uuid',
      'servers.startup as server_startup',
      'servers.stop_command as server_stop_command',
      'servers.status as server_status',
    ])
    .select((eb) =>
      eb.exists(eb.selectFrom('tasks').select('tasks.id').whereRef('tasks.schedule_id', '=', 'schedules.id')).as('has_tasks'),
    );
}

type CandidateRow = Omit<RunCandidate, 'has_tasks'> & { has_tasks: unknown };
// PostgreSQL answers EXISTS with a boolean, SQLite with 0/1.
const toCandidate = (row: CandidateRow): RunCandidate => ({ ...row, has_tasks: row.has_tasks === true || Number(row.has_tasks) === 1 });

/** Which candidates to look at: idle active schedules whose time came, or pending manual executions. */
export type CandidateKind = { kind: 'due'; now: number } | { kind: 'requested' };

function candidateQuery(db: Queryable, pick: CandidateKind, limit: number) {
  const query = candidates(db).where('schedules.is_processing', '=', ZERO).limit(limit);
  switch (pick.kind) {
    case 'due':
      return query.where('schedules.is_active', '=', ONE).where('schedules.next_run_at', '<=', pick.now).orderBy('schedules.next_run_at');
    case 'requested':
      return query.where('schedules.run_requested_at', 'is not', null).orderBy('schedules.run_requested_at');
  }
}

/**
 * Reads up to `limit` candidates and hands them, with an open transaction, to
 * `work`, which claims or skips them. The one dialect-specific query of the
 * scheduler, both versions side by side:
 *
 * - PostgreSQL: the candidates are read inside the transaction and locked
 *   `FOR UPDATE OF schedules SKIP LOCKED`: instances divide a burst of due
 *   schedules between them (each takes rows no other holds) instead of queueing
 *   behind one another's locks, and nobody else changes those rows until commit.
 * - SQLite: one writer at a time, and no row locks. The candidates are read
 *   before the transaction; every write `work` makes is conditional on the
 *   row's state (claimRuns, advancePastSkippedRun, dropRunRequest), and its
 *   first statement is a write, which takes the database's write lock — so of
 *   two processes, the second finds the rows already processing and claims none.
 *
 * Returns null when there was no candidate.
 */
export async function withClaimableCandidates<R>(
  db: Database,
  dialect: DialectName,
  pick: CandidateKind,
  limit: number,
  work: (trx: Queryable, candidates: RunCandidate[]) => Promise<R>,
): Promise<R | null> {
  switch (dialect) {
    case 'postgres':
      return db.transaction().execute(async (trx) => {
        const rows = await candidateQuery(trx, pick, limit).forUpdate('schedules').skipLocked().execute();
        return rows.length === 0 ? null : work(trx, rows.map(toCandidate));
      });
    case 'sqlite': {
      const rows = await candidateQuery(db, pick, limit).execute();
      if (rows.length === 0) return null;
      return db.transaction().execute((trx) => work(trx, rows.map(toCandidate)));
    }
  }
}

/**
 * A time that came while the schedule could not run (server not ready, no
 * tasks, offline with only_when_online): move on to the next match. Only if
 * nobody changed the row since it was read; false otherwise.
 */
export async function advancePastSkippedRun(db: Queryable, candidate: RunCandidate, nextRunAt: number | null): Promise<boolean> {
  if (candidate.next_run_at === null) return false;
  const result = await db
    .updateTable('schedules')
    .set({ next_run_at: nextRunAt })
    .where('id', '=', candidate.id)
    .where('is_processing', '=', ZERO)
    .where('next_run_at', '=', candidate.next_run_at)
    .where('updated_at', '=', candidate.updated_at)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Drops a manual execution that cannot run (same conditions as above). */
export async function dropRunRequest(db: Queryable, candidate: RunCandidate): Promise<boolean> {
  if (candidate.run_requested_at === null) return false;
  const result = await db
    .updateTable('schedules')
    .set({ run_requested_at: null })
    .where('id', '=', candidate.id)
    .where('is_processing', '=', ZERO)
    .where('run_requested_at', '=', candidate.run_requested_at)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

// ---------------------------------------------------------------- claiming

const serverReady = (eb: ExpressionBuilder<Tables, 'schedules'>) =>
  eb.exists(
    eb.selectFrom('servers').select('servers.id').whereRef('servers.id', '=', 'schedules.server_id').where('servers.status', 'is', null),
  );
const hasTasks = (eb: ExpressionBuilder<Tables, 'schedules'>) =>
  eb.exists(eb.selectFrom('tasks').select('tasks.id').whereRef('tasks.schedule_id', '=', 'schedules.id'));

/**
 * Starts runs: the rows of `nextRunById` that are still runnable (idle, due or
 * requested, server ready, with tasks) become processing under this
 * instance's lease, with a new run number, an empty cursor and their next run
 * time; a pending manual request is consumed. Returns the claimed rows.
 */
export async function claimRuns(
  db: Queryable,
  nextRunById: Map<number, number | null>,
  claim: { now: number; instance: string; leaseExpiresAt: number },
): Promise<ScheduleRow[]> {
  const ids = [...nextRunById.keys()];
  if (ids.length === 0) return [];
  return db
    .updateTable('schedules')
    .set((eb) => ({
      is_processing: 1,
      claimed_by: claim.instance,
      lease_expires_at: claim.leaseExpiresAt,
      run_number: eb(eb.ref('run_number'), '+', 1),
      run_cursor: 0,
      run_step_at: claim.now,
      run_requested_at: null,
      next_run_at: valueById(nextRunById),
    }))
    .where('id', 'in', ids)
    .where('is_processing', '=', ZERO)
    .where((eb) =>
      eb.or([eb('run_requested_at', 'is not', null), eb.and([eb('is_active', '=', ONE), eb('next_run_at', '<=', claim.now)])]),
    )
    .where(serverReady)
    .where(hasTasks)
    .returningAll()
    .execute();
}

/**
 * One value per row in one statement: a constant when they all agree (schedules
 * sharing an expression), else `case id when ... end`. The cast gives
 * PostgreSQL the type it cannot infer from bare parameters.
 */
function valueById(values: Map<number, number | null>) {
  const distinct = new Set(values.values());
  if (distinct.size === 1) return [...distinct][0] ?? null;
  const branches = [...values].map(([id, value]) => sql`when ${id} then cast(${value} as bigint)`);
  return sql<number | null>`case id ${sql.join(branches, sql` `)} end`;
}

/** Sets next_run_at of claimed rows whose expression changed between reading and claiming (SQLite only). */
export async function setNextRunTimes(db: Queryable, nextById: Map<number, number | null>): Promise<void> {
  if (nextById.size === 0) return;
  await db
    .updateTable('schedules')
    .set({ next_run_at: valueById(nextById) })
    .where('id', 'in', [...nextById.keys()])
    .execute();
}

/** Queues the first task (by sequence) of each schedule, and returns it: one statement. */
export async function queueFirstTasks(db: Queryable, scheduleIds: number[]): Promise<Map<number, TaskRow>> {
  const first = new Map<number, TaskRow>();
  if (scheduleIds.length === 0) return first;
  const rows = await db
    .updateTable('tasks')
    .set({ is_queued: 1 })
    .where('schedule_id', 'in', scheduleIds)
    .where('sequence_id', '=', (eb) =>
      eb
        .selectFrom('tasks as first')
        .select((e) => e.fn.min('first.sequence_id').as('sequence_id'))
        .whereRef('first.schedule_id', '=', 'tasks.schedule_id'),
    )
    .returningAll()
    .execute();
  rows.sort((a, b) => a.id - b.id);
  for (const row of rows) if (!first.has(row.schedule_id)) first.set(row.schedule_id, row);
  return first;
}

export async function markTasksQueued(db: Queryable, taskIds: number[]): Promise<void> {
  if (taskIds.length === 0) return;
  await db.updateTable('tasks').set({ is_queued: 1 }).where('id', 'in', taskIds).where('is_queued', '=', ZERO).execute();
}

/**
 * Several system entries at once, through the activity recorder's bulk write
 * (modules/activity/activity.recorder.ts); a claim of a hundred runs writes
 * its hundred `server:schedule.run` entries with a handful of statements, in
 * the claim's transaction.
 */
export async function recordActivities(
  db: Queryable,
  entries: { serverId: number; event: string; actor: Actor; properties: Record<string, unknown>; timestamp: number }[],
): Promise<void> {
  await recordActivityEntries(db, entries);
}

// ---------------------------------------------------------------- a run's progress

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
 * that depth; its limit is 1000): see STEP_BATCH in scheduler.ts.
 */
function ownRuns(runs: { scheduleId: number; runNumber: number }[]) {
  return (eb: ExpressionBuilder<Tables, 'schedules'>) =>
    eb.and([
      eb('id', 'in', runs.map((r) => r.scheduleId)),
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
      s.event ? [{ serverId: s.serverId, event: s.event.event, actor: at.actor, properties: s.event.properties, timestamp: at.now }] : [],
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
    ? await db.selectFrom('servers').select(['id', 'status']).where('id', 'in', [...new Set(goingOn.map((s) => s.serverId))]).execute()
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
      .set({ is_processing: 0, last_run_at: at.now, claimed_by: null, lease_expires_at: null, run_cursor: null, run_step_at: null })
      .where('id', 'in', ids)
      .execute();
    await db.updateTable('tasks').set({ is_queued: 0 }).where('schedule_id', 'in', ids).where('is_queued', '=', ONE).execute();
  }
  // 5. Runs that go on: the finished task leaves the queue, the next one joins it.
  const continuing = mine.filter((s) => next.has(key(s)));
  if (continuing.length > 0) {
    await db.updateTable('tasks').set({ is_queued: 0 }).where('id', 'in', continuing.map((s) => s.taskId)).execute();
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
  await db.updateTable('tasks').set({ is_queued: 0 }).where('schedule_id', '=', run.scheduleId).where('is_queued', '=', ONE).execute();
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
          eb.selectFrom('schedules').select('schedules.id').where('schedules.id', '=', scheduleId).where('schedules.is_processing', '=', ONE),
        ),
      ),
    )
    .execute();
}

// ---------------------------------------------------------------- leases and recovery

/** Keeps this instance's live runs claimed (chunked: a long IN list is fine, an unbounded one is not). */
export async function renewLeases(db: Queryable, instance: string, scheduleIds: number[], leaseExpiresAt: number): Promise<void> {
  for (let i = 0; i < scheduleIds.length; i += 500) {
    await db
      .updateTable('schedules')
      .set({ lease_expires_at: leaseExpiresAt })
      .where('claimed_by', '=', instance)
      .where('is_processing', '=', ONE)
      .where('id', 'in', scheduleIds.slice(i, i + 500))
      .execute();
  }
}

/** At shutdown: hand this instance's unfinished runs over (their lease ends now), so any instance resumes them. */
export async function releaseLeases(db: Queryable, instance: string, expiredAt: number): Promise<number> {
  const result = await db
    .updateTable('schedules')
    .set({ lease_expires_at: expiredAt })
    .where('claimed_by', '=', instance)
    .where('is_processing', '=', ONE)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The instances holding runs now (to spot those that died on this machine). */
export async function findClaimants(db: Queryable): Promise<string[]> {
  const rows = await db
    .selectFrom('schedules')
    .select('claimed_by')
    .distinct()
    .where('is_processing', '=', ONE)
    .where('claimed_by', 'is not', null)
    .execute();
  return rows.map((r) => r.claimed_by).filter((c): c is string => c !== null);
}

export interface OrphanedRun extends ScheduleRow {
  server_uuid: string;
  server_startup: string | null;
  server_stop_command: string | null;
}

/**
 * Runs whose holder is gone: lease expired (or never set), or held by an
 * instance known to be dead. Never this instance's own.
 */
export async function findOrphanedRuns(
  db: Queryable,
  opts: { now: number; self: string; deadClaimants: string[]; limit: number },
): Promise<OrphanedRun[]> {
  return db
    .selectFrom('schedules')
    .innerJoin('servers', 'servers.id', 'schedules.server_id')
    .selectAll('schedules')
    .select(['servers.uuid as server_uuid', 'servers.startup as server_startup', 'servers.stop_command as server_stop_command'])
    .where('schedules.is_processing', '=', ONE)
    .where((eb) => {
      const orphaned = [eb('schedules.lease_expires_at', '<=', opts.now), eb('schedules.lease_expires_at', 'is', null)];
      if (opts.deadClaimants.length > 0) orphaned.push(eb('schedules.claimed_by', 'in', opts.deadClaimants));
      return eb.and([eb.or(orphaned), eb.or([eb('schedules.claimed_by', 'is', null), eb('schedules.claimed_by', '<>', opts.self)])]);
    })
    .orderBy('schedules.lease_expires_at')
    .limit(opts.limit)
    .execute();
}

/** Takes an orphaned run over (compare-and-set on its run number, which it bumps: the old holder is fenced off). */
export async function takeOverRun(
  db: Queryable,
  orphan: { id: number; run_number: number },
  claim: { instance: string; leaseExpiresAt: number },
): Promise<ScheduleRow | undefined> {
  return db
    .updateTable('schedules')
    .set((eb) => ({ claimed_by: claim.instance, lease_expires_at: claim.leaseExpiresAt, run_number: eb(eb.ref('run_number'), '+', 1) }))
    .where('id', '=', orphan.id)
    .where('run_number', '=', orphan.run_number)
    .where('is_processing', '=', ONE)
    .returningAll()
    .executeTakeFirst();
}
