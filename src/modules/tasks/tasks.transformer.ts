import type { TaskRow } from '../../db/schema.js';
import { isoDate } from '../../http/dates.js';
import { item } from '../../http/envelopes.js';

/** The seed names this object `task` (Pterodactyl says `schedule_task`; clients read `attributes` only). */
export function taskItem(task: TaskRow) {
  return item('task', {
    id: task.id,
    sequence_id: task.sequence_id,
    action: task.action,
    payload: task.payload,
    time_offset: task.time_offset,
    is_queued: task.is_queued === 1,
    continue_on_failure: task.continue_on_failure === 1,
    created_at: isoDate(task.created_at),
    updated_at: isoDate(task.updated_at),
  });
}
