import type { DialectName, Queryable } from '../../db/database.js';
import type { NewTask, TaskRow, TaskUpdate } from '../../db/schema.js';

/**
 * Serialises changes to one schedule's task list. PostgreSQL needs a row lock
 * (two concurrent creates would both see 9 tasks); SQLite's writer lock already
 * serialises transactions.
 */
export async function lockSchedule(db: Queryable, dialect: DialectName, scheduleId: number): Promise<void> {
  let query = db.selectFrom('schedules').select('id').where('id', '=', scheduleId);
  if (dialect === 'postgres') query = query.forUpdate();
  await query.execute();
}

export async function countTasks(db: Queryable, scheduleId: number): Promise<number> {
  const row = await db
    .selectFrom('tasks')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('schedule_id', '=', scheduleId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function insertTask(db: Queryable, values: NewTask): Promise<TaskRow> {
  return db.insertInto('tasks').values(values).returningAll().executeTakeFirstOrThrow();
}

export async function updateTaskRow(db: Queryable, id: number, values: TaskUpdate): Promise<TaskRow> {
  return db.updateTable('tasks').set(values).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function deleteTaskRow(db: Queryable, id: number): Promise<void> {
  await db.deleteFrom('tasks').where('id', '=', id).execute();
}

/** Moves the tasks whose sequence_id lies in [from, to] (to null: no upper end) by `delta` (+1 or -1). */
export async function shiftSequence(
  db: Queryable,
  scheduleId: number,
  from: number,
  to: number | null,
  delta: 1 | -1,
): Promise<void> {
  if (to !== null && from > to) return;
  let query = db
    .updateTable('tasks')
    .set((eb) => ({ sequence_id: eb('sequence_id', '+', delta) }))
    .where('schedule_id', '=', scheduleId)
    .where('sequence_id', '>=', from);
  if (to !== null) query = query.where('sequence_id', '<=', to);
  await query.execute();
}

/** A task by id, only if it belongs to `scheduleId`. */
export async function findTaskOfSchedule(db: Queryable, id: number, scheduleId: number): Promise<TaskRow | undefined> {
  return db.selectFrom('tasks').selectAll().where('id', '=', id).where('schedule_id', '=', scheduleId).executeTakeFirst();
}

/** A task's current place in its schedule; undefined once it is gone. */
export async function findTaskSequence(db: Queryable, id: number): Promise<number | undefined> {
  const row = await db.selectFrom('tasks').select('sequence_id').where('id', '=', id).executeTakeFirst();
  return row?.sequence_id;
}
