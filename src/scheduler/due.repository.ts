import { sql } from 'kysely';
import type { Database, DialectName, Queryable } from '../db/database.js';
import type { ServerStatus } from '../db/schema.js';
import { ONE, ZERO } from './sql-flags.js';

/**
 * What is due: the times the scheduler sleeps until, and the schedules that
 * may start a run now (read, and on PostgreSQL locked, for the claim), or
 * whose time came while they could not run.
 *
 * Every write here is conditional (compare-and-set on the row's current
 * state), so that two instances can never both win; see docs/SCHEDULER.md.
 */

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
const toCandidate = (row: CandidateRow): RunCandidate => ({
  ...row,
  has_tasks: row.has_tasks === true || Number(row.has_tasks) === 1,
});

/** Which candidates to look at: idle active schedules whose time came, or pending manual executions. */
export type CandidateKind = { kind: 'due'; now: number } | { kind: 'requested' };

function candidateQuery(db: Queryable, pick: CandidateKind, limit: number) {
  const query = candidates(db).where('schedules.is_processing', '=', ZERO).limit(limit);
  switch (pick.kind) {
    case 'due':
      return query
        .where('schedules.is_active', '=', ONE)
        .where('schedules.next_run_at', '<=', pick.now)
        .orderBy('schedules.next_run_at');
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
