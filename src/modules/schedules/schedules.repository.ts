import type { Queryable } from '../../db/database.js';
import type { NewSchedule, ScheduleRow, ScheduleUpdate, TaskRow } from '../../db/schema.js';

export async function insertSchedule(db: Queryable, values: NewSchedule): Promise<ScheduleRow> {
  return db.insertInto('schedules').values(values).returningAll().executeTakeFirstOrThrow();
}

export async function updateScheduleRow(db: Queryable, id: number, values: ScheduleUpdate): Promise<ScheduleRow> {
  return db.updateTable('schedules').set(values).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function deleteScheduleRow(db: Queryable, id: number): Promise<void> {
  await db.deleteFrom('tasks').where('schedule_id', '=', id).execute();
  await db.deleteFrom('schedules').where('id', '=', id).execute();
}

export async function findSchedulesOfServer(db: Queryable, serverId: number): Promise<ScheduleRow[]> {
  return db.selectFrom('schedules').selectAll().where('server_id', '=', serverId).orderBy('id').execute();
}

/** The tasks of several schedules in one query, each schedule's in sequence order. */
export async function findTasksBySchedule(db: Queryable, scheduleIds: number[]): Promise<Map<number, TaskRow[]>> {
  const bySchedule = new Map<number, TaskRow[]>(scheduleIds.map((id) => [id, []]));
  if (scheduleIds.length === 0) return bySchedule;
  const rows = await db
    .selectFrom('tasks')
    .selectAll()
    .where('schedule_id', 'in', scheduleIds)
    .orderBy('schedule_id')
    .orderBy('sequence_id')
    .orderBy('id')
    .execute();
  for (const row of rows) bySchedule.get(row.schedule_id)?.push(row);
  return bySchedule;
}

/** A schedule by id, only if it belongs to `serverId`. */
export async function findScheduleOfServer(db: Queryable, id: number, serverId: number): Promise<ScheduleRow | undefined> {
  return db.selectFrom('schedules').selectAll().where('id', '=', id).where('server_id', '=', serverId).executeTakeFirst();
}

/**
 * Asks for a run now (docs/reference/schedules.md#running-schedules) in one conditional UPDATE: only if the schedule
 * is idle, not already requested, has tasks, and its server's status is null.
 * Of two concurrent requests exactly one is accepted. False when refused.
 */
export async function markRunRequested(db: Queryable, scheduleId: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('schedules')
    .set({ run_requested_at: now })
    .where('id', '=', scheduleId)
    .where('is_processing', '=', 0)
    .where('run_requested_at', 'is', null)
    .where((eb) => eb.exists(eb.selectFrom('tasks').select('tasks.id').whereRef('tasks.schedule_id', '=', 'schedules.id')))
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('servers')
          .select('servers.id')
          .whereRef('servers.id', '=', 'schedules.server_id')
          .where('servers.status', 'is', null),
      ),
    )
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function scheduleHasTasks(db: Queryable, scheduleId: number): Promise<boolean> {
  const task = await db.selectFrom('tasks').select('id').where('schedule_id', '=', scheduleId).limit(1).executeTakeFirst();
  return task !== undefined;
}
