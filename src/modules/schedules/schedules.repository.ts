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
