import type { Task } from '../../api/types';
import { ACTION_LABELS } from '../task-form';

/**
 * One task of a schedule's list (docs/reference/schedules.md#tasks): what it
 * does and when, and its buttons to move it up or down, edit it or delete it.
 */

function describeTask(task: Task): string {
  switch (task.action) {
    case 'command':
      return task.payload;
    case 'power':
      return `${task.payload} the server`;
    case 'backup':
      return task.payload ? `ignoring ${task.payload.split('\n').filter(Boolean).length} patterns` : 'everything';
    case 'delete_files':
      return task.payload.split('\n').filter(Boolean).join(', ');
  }
}

interface TaskRowProps {
  task: Task;
  canUpdate: boolean;
  first: boolean;
  last: boolean;
  /** A move is pending: the arrows wait for it. */
  moving: boolean;
  onMove(by: -1 | 1): void;
  onEdit(): void;
  onDelete(): void;
}

export function TaskRow({ task, canUpdate, first, last, moving, onMove, onEdit, onDelete }: TaskRowProps) {
  return (
    <>
      <div class="row-main">
        <span class="row-title">
          {task.sequence_id}. {ACTION_LABELS[task.action]}
        </span>
        <span class="mono wrap">{describeTask(task)}</span>
        <span class="muted">
          {task.time_offset > 0 ? `${task.time_offset} s after the previous task` : 'Right after the previous task'}
          {task.continue_on_failure ? ' · continues on failure' : ' · stops the run on failure'}
        </span>
      </div>
      <div class="row-actions">
        <button
          type="button"
          aria-label={`Move task ${task.sequence_id} up`}
          disabled={!canUpdate || first || moving}
          onClick={() => onMove(-1)}
        >
          ↑
        </button>
        <button
          type="button"
          aria-label={`Move task ${task.sequence_id} down`}
          disabled={!canUpdate || last || moving}
          onClick={() => onMove(1)}
        >
          ↓
        </button>
        <button type="button" aria-label={`Edit task ${task.sequence_id}`} disabled={!canUpdate} onClick={onEdit}>
          Edit
        </button>
        <button
          type="button"
          class="danger"
          aria-label={`Delete task ${task.sequence_id}`}
          disabled={!canUpdate}
          onClick={onDelete}
        >
          Delete
        </button>
      </div>
    </>
  );
}
