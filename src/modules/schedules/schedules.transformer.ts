import { isoDate } from '../../http/dates.js';
import { item, list } from '../../http/envelopes.js';
import { taskItem } from '../tasks/tasks.transformer.js';
import type { ScheduleWithTasks } from './schedules.service.js';

/** `server_schedule` with its tasks under relationships, where Pterodactyl's clients read them (docs/reference/schedules.md#schedules). */
export function scheduleItem({ schedule, tasks }: ScheduleWithTasks) {
  return item('server_schedule', {
    id: schedule.id,
    name: schedule.name,
    cron: {
      day_of_week: schedule.cron_day_of_week,
      day_of_month: schedule.cron_day_of_month,
      month: schedule.cron_month,
      hour: schedule.cron_hour,
      minute: schedule.cron_minute,
    },
    is_active: schedule.is_active === 1,
    is_processing: schedule.is_processing === 1,
    only_when_online: schedule.only_when_online === 1,
    last_run_at: isoDate(schedule.last_run_at),
    next_run_at: isoDate(schedule.next_run_at),
    created_at: isoDate(schedule.created_at),
    updated_at: isoDate(schedule.updated_at),
    relationships: {
      tasks: list(tasks.map(taskItem)),
    },
  });
}
