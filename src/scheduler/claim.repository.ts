import { sql, type ExpressionBuilder } from 'kysely';
import type { Queryable } from '../db/database.js';
import type { ScheduleRow, Tables, TaskRow } from '../db/schema.js';
import { ONE, ZERO } from './sql-flags.js';

/**
 * Starting runs: the compare-and-set that turns due or requested schedules
 * into runs held by this instance, and the queueing of their first task. Runs
 * inside the transaction of withClaimableCandidates (due.repository.ts).
 */

const serverReady = (eb: ExpressionBuilder<Tables, 'schedules'>) =>
  eb.exists(
    eb
      .selectFrom('servers')
      .select('servers.id')
      .whereRef('servers.id', '=', 'schedules.server_id')
      .where('servers.status', 'is', null),
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
