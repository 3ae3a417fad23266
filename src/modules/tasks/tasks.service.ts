import type { AppDeps } from '../../deps.js';
import type { ScheduleRow, ServerRow, TaskRow, TaskUpdate } from '../../db/schema.js';
import { serviceLimitExceeded } from '../../http/errors.js';
import type { Access } from '../../http/permissions.js';
import { toBoolean } from '../../http/validation.js';
import { recordActivity, type Actor } from '../activity/activity.recorder.js';
import type { CreateTaskInput, TaskAction, UpdateTaskInput } from './tasks.schemas.js';
import { assertMayUseTask, sequencePosition, timeOffset, validatePayload } from './tasks.rules.js';
import {
  countTasks,
  deleteTaskRow,
  findTaskSequence,
  insertTask,
  lockSchedule,
  shiftSequence,
  updateTaskRow,
} from './tasks.repository.js';

type Deps = Pick<AppDeps, 'db' | 'dialect' | 'clock' | 'config'>;

export interface TaskTarget {
  server: ServerRow;
  schedule: ScheduleRow;
  access: Access;
}

/** Checks in docs/reference/schedules.md#tasks's order: the body (422), then the resulting action's permission (403), then the limit (400). */
export async function createTask(deps: Deps, target: TaskTarget, actor: Actor, input: CreateTaskInput): Promise<TaskRow> {
  const action = input.action as TaskAction;
  const payload = validatePayload(action, input.payload);
  const offset = timeOffset(input.time_offset);
  const requested = input.sequence_id === undefined ? null : sequencePosition(input.sequence_id);
  assertMayUseTask(target.access, action, payload, target.server.backup_limit);

  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    await lockSchedule(trx, deps.dialect, target.schedule.id);
    const count = await countTasks(trx, target.schedule.id);
    if (count >= deps.config.scheduleTaskLimit) {
      throw serviceLimitExceeded(
        `Schedules may not have more than ${deps.config.scheduleTaskLimit} tasks associated with them. Creating this task would put this schedule over the limit.`,
      );
    }
    // Without a position the task goes last; with one, the tasks at or after it move up.
    const position = requested === null ? count + 1 : Math.min(requested, count + 1);
    await shiftSequence(trx, target.schedule.id, position, count, 1);
    const task = await insertTask(trx, {
      schedule_id: target.schedule.id,
      sequence_id: position,
      action,
      payload,
      time_offset: offset,
      is_queued: 0,
      continue_on_failure: input.continue_on_failure !== undefined && toBoolean(input.continue_on_failure) ? 1 : 0,
      created_at: now,
      updated_at: now,
    });
    await recordActivity(trx, {
      serverId: target.server.id,
      event: 'server:task.create',
      actor,
      properties: { name: target.schedule.name, action: task.action, payload: task.payload },
      timestamp: now,
    });
    return task;
  });
}

/** A partial update; the task as it would be afterwards must satisfy every rule (docs/reference/schedules.md#tasks). */
export async function updateTask(
  deps: Deps,
  target: TaskTarget,
  task: TaskRow,
  actor: Actor,
  input: UpdateTaskInput,
): Promise<TaskRow> {
  const action = (input.action ?? task.action) as TaskAction;
  let payloadGiven = input.payload;
  // A change of action without a payload keeps the old one, which must fit the new action; a backup's becomes "".
  if (payloadGiven === undefined && action !== task.action && action === 'backup') payloadGiven = '';
  const payload = validatePayload(action, payloadGiven ?? (task.payload === '' ? undefined : task.payload));
  const offset = input.time_offset === undefined ? task.time_offset : timeOffset(input.time_offset);
  const requested = input.sequence_id === undefined ? null : sequencePosition(input.sequence_id);
  assertMayUseTask(target.access, action, payload, target.server.backup_limit);

  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    await lockSchedule(trx, deps.dialect, target.schedule.id);
    const changes: TaskUpdate = { action, payload, time_offset: offset, updated_at: now };
    if (input.continue_on_failure !== undefined) changes.continue_on_failure = toBoolean(input.continue_on_failure) ? 1 : 0;
    if (requested !== null) {
      const count = await countTasks(trx, target.schedule.id);
      const position = Math.min(requested, count);
      // Keep sequence ids 1..n with no gaps or duplicates: shift the tasks in between.
      if (position < task.sequence_id) await shiftSequence(trx, target.schedule.id, position, task.sequence_id - 1, 1);
      if (position > task.sequence_id) await shiftSequence(trx, target.schedule.id, task.sequence_id + 1, position, -1);
      changes.sequence_id = position;
    }
    const updated = await updateTaskRow(trx, task.id, changes);
    await recordActivity(trx, {
      serverId: target.server.id,
      event: 'server:task.update',
      actor,
      properties: { name: target.schedule.name, action: updated.action, payload: updated.payload },
      timestamp: now,
    });
    return updated;
  });
}

export async function deleteTask(deps: Deps, target: TaskTarget, task: TaskRow, actor: Actor): Promise<void> {
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    await lockSchedule(trx, deps.dialect, target.schedule.id);
    const sequence = await findTaskSequence(trx, task.id);
    await deleteTaskRow(trx, task.id);
    if (sequence !== undefined) await shiftSequence(trx, target.schedule.id, sequence + 1, null, -1);
    await recordActivity(trx, {
      serverId: target.server.id,
      event: 'server:task.delete',
      actor,
      properties: { name: target.schedule.name },
      timestamp: now,
    });
  });
}
