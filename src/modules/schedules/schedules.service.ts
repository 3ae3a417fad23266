import type { AppDeps } from '../../deps.js';
import type { Queryable } from '../../db/database.js';
import type { ScheduleRow, ScheduleUpdate, ServerRow, TaskRow } from '../../db/schema.js';
import { conflict, displayException, ValidationError } from '../../http/errors.js';
import { toBoolean } from '../../http/validation.js';
import { recordActivity, type Actor } from '../activity/activity.recorder.js';
import { checkCron, cronFieldsOf, nextRunAfter, type CronFields } from '../../timing/cron.js';
import { notifySchedulesChanged } from '../../timing/wakeup.js';
import { findServerStatus } from '../servers/servers.repository.js';
import type { CreateScheduleInput, UpdateScheduleInput } from './schedules.schemas.js';
import {
  deleteScheduleRow,
  findSchedulesOfServer,
  findTasksBySchedule,
  insertSchedule,
  markRunRequested,
  scheduleHasTasks,
  updateScheduleRow,
} from './schedules.repository.js';

type Deps = Pick<AppDeps, 'db' | 'clock' | 'config'> & { onSchedulesChanged?: (() => void) | undefined };

export interface ScheduleWithTasks {
  schedule: ScheduleRow;
  /** In sequence order. */
  tasks: TaskRow[];
}

/** A server's schedules, each with its tasks (two queries, whatever the count). */
export async function listSchedules(db: Queryable, server: ServerRow): Promise<ScheduleWithTasks[]> {
  const schedules = await findSchedulesOfServer(db, server.id);
  const tasks = await findTasksBySchedule(
    db,
    schedules.map((s) => s.id),
  );
  return schedules.map((schedule) => ({ schedule, tasks: tasks.get(schedule.id) ?? [] }));
}

export async function scheduleWithTasks(db: Queryable, schedule: ScheduleRow): Promise<ScheduleWithTasks> {
  const tasks = await findTasksBySchedule(db, [schedule.id]);
  return { schedule, tasks: tasks.get(schedule.id) ?? [] };
}

/** Validates the expression and returns its next run strictly after `now` (docs/reference/schedules.md#schedules). */
function nextRunOf(fields: CronFields, timezone: string, now: number): number {
  const check = checkCron(fields, timezone, new Date(now));
  if (!check.ok) throw ValidationError.of(check.field, 'cron', check.message);
  const next = nextRunAfter(fields, new Date(now), timezone);
  if (!next) throw ValidationError.of('cron', 'cron', 'The cron expression never matches a future time.');
  return next.getTime();
}

export async function createSchedule(
  deps: Deps,
  server: ServerRow,
  actor: Actor,
  input: CreateScheduleInput,
): Promise<ScheduleRow> {
  const now = deps.clock.now();
  const fields: CronFields = {
    minute: input.minute ?? '*',
    hour: input.hour ?? '*',
    day_of_month: input.day_of_month ?? '*',
    month: input.month ?? '*',
    day_of_week: input.day_of_week ?? '*',
  };
  const nextRunAt = nextRunOf(fields, deps.config.timezone, now);
  const schedule = await deps.db.transaction().execute(async (trx) => {
    const row = await insertSchedule(trx, {
      server_id: server.id,
      name: input.name,
      cron_minute: fields.minute,
      cron_hour: fields.hour,
      cron_day_of_month: fields.day_of_month,
      cron_month: fields.month,
      cron_day_of_week: fields.day_of_week,
      // Pterodactyl stores false when absent; a schedule someone just created is meant to run (docs/reference/schedules.md#schedules).
      is_active: input.is_active === undefined || toBoolean(input.is_active) ? 1 : 0,
      is_processing: 0,
      only_when_online: input.only_when_online !== undefined && toBoolean(input.only_when_online) ? 1 : 0,
      last_run_at: null,
      next_run_at: nextRunAt,
      created_at: now,
      updated_at: now,
    });
    await recordActivity(trx, {
      serverId: server.id,
      event: 'server:schedule.create',
      actor,
      properties: { name: row.name },
      timestamp: now,
    });
    return row;
  });
  deps.onSchedulesChanged?.();
  return schedule;
}

/**
 * A partial update: absent members keep their value; `{}` still touches
 * updated_at and logs (docs/reference/schedules.md#schedules). Returns the schedule as it is now, with its tasks.
 */
export async function updateSchedule(
  deps: Deps,
  server: ServerRow,
  schedule: ScheduleRow,
  actor: Actor,
  input: UpdateScheduleInput,
): Promise<ScheduleWithTasks> {
  const now = deps.clock.now();
  const before = cronFieldsOf(schedule);
  const fields: CronFields = {
    minute: input.minute ?? before.minute,
    hour: input.hour ?? before.hour,
    day_of_month: input.day_of_month ?? before.day_of_month,
    month: input.month ?? before.month,
    day_of_week: input.day_of_week ?? before.day_of_week,
  };
  const cronChanged = (Object.keys(fields) as (keyof CronFields)[]).some((k) => fields[k] !== before[k]);
  const isActive = input.is_active === undefined ? schedule.is_active === 1 : toBoolean(input.is_active);
  const activeChanged = isActive !== (schedule.is_active === 1);

  const changes: ScheduleUpdate = { updated_at: now, is_active: isActive ? 1 : 0 };
  if (input.name !== undefined) changes.name = input.name;
  if (input.only_when_online !== undefined) changes.only_when_online = toBoolean(input.only_when_online) ? 1 : 0;
  if (cronChanged) {
    changes.cron_minute = fields.minute;
    changes.cron_hour = fields.hour;
    changes.cron_day_of_month = fields.day_of_month;
    changes.cron_month = fields.month;
    changes.cron_day_of_week = fields.day_of_week;
  }
  // Toggling is_active is the escape hatch for a run stuck in processing.
  if (activeChanged) changes.is_processing = 0;
  // A new expression, or a schedule switched back on, counts from now: no firing for a time long gone.
  if (cronChanged || (activeChanged && isActive)) changes.next_run_at = nextRunOf(fields, deps.config.timezone, now);

  const updated = await deps.db.transaction().execute(async (trx) => {
    const row = await updateScheduleRow(trx, schedule.id, changes);
    await recordActivity(trx, {
      serverId: server.id,
      event: 'server:schedule.update',
      actor,
      properties: { name: row.name, active: row.is_active === 1 },
      timestamp: now,
    });
    return row;
  });
  deps.onSchedulesChanged?.();
  return scheduleWithTasks(deps.db, updated);
}

export async function deleteSchedule(deps: Deps, server: ServerRow, schedule: ScheduleRow, actor: Actor): Promise<void> {
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    await deleteScheduleRow(trx, schedule.id);
    await recordActivity(trx, {
      serverId: server.id,
      event: 'server:schedule.delete',
      actor,
      properties: { name: schedule.name },
      timestamp: now,
    });
  });
  deps.onSchedulesChanged?.();
}

const NO_TASKS = 'Cannot process schedule for task execution: no tasks are registered.';
const BUSY = 'This schedule is already running or waiting to run.';
const SERVER_NOT_READY = 'This server is not in a state that allows its schedules to run.';

/**
 * POST .../schedules/{schedule}/execute (docs/reference/schedules.md#running-schedules): asks for a run now, whatever
 * is_active says. The request is a row change, not a call into this process's
 * scheduler, so that it works with SCHEDULER=off: whichever instance runs the
 * scheduler picks it up (woken at once here, by NOTIFY elsewhere on PostgreSQL,
 * by its poll on SQLite) and logs `server:schedule.run` like any run.
 *
 * One conditional UPDATE decides (markRunRequested); `server:schedule.execute`
 * is written in the same transaction.
 */
export async function requestScheduleRun(
  deps: Deps & Pick<AppDeps, 'dialect'>,
  server: ServerRow,
  schedule: ScheduleRow,
  actor: Actor,
): Promise<void> {
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    if (!(await markRunRequested(trx, schedule.id, now))) {
      // Refused: say why, in docs/reference/schedules.md#running-schedules's terms.
      if (!(await scheduleHasTasks(trx, schedule.id))) throw displayException(NO_TASKS);
      const current = await findServerStatus(trx, server.id);
      throw conflict(current?.status === null ? BUSY : SERVER_NOT_READY);
    }
    await recordActivity(trx, {
      serverId: server.id,
      event: 'server:schedule.execute',
      actor,
      properties: { name: schedule.name },
      timestamp: now,
    });
    // Delivered at commit, to schedulers in other processes.
    await notifySchedulesChanged(trx, deps.dialect);
  });
  deps.onSchedulesChanged?.();
}
