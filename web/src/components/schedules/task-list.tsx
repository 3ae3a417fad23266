import { useState } from 'preact/hooks';
import { useCreateTask, useDeleteTask, useUpdateTask } from '../../api/schedules';
import type { Task } from '../../api/types';
import { useServer } from '../../lib/server-context';
import { TaskForm } from '../task-form';
import { ConfirmDialog, ErrorText } from '../ui';
import { TaskRow } from './task-row';

/**
 * A schedule's tasks in their order (docs/reference/schedules.md#tasks): each
 * edited in place, moved up or down, deleted after a confirmation, and a form
 * for new ones that stays open for the next. Each change refreshes the
 * schedule and the list through the schedules API module.
 */

interface TaskListProps {
  scheduleId: string;
  /** In run order (by sequence_id). */
  tasks: readonly Task[];
  canUpdate: boolean;
}

export function TaskList({ scheduleId, tasks, canUpdate }: TaskListProps) {
  const { id } = useServer();
  const [editing, setEditing] = useState<number | null>(null);
  const [adding, setAdding] = useState(false);
  const [removing, setRemoving] = useState<Task | null>(null);
  const create = useCreateTask(id, scheduleId);
  const edit = useUpdateTask(id, scheduleId);
  const move = useUpdateTask(id, scheduleId);
  const remove = useDeleteTask(id, scheduleId);

  const startEditing = (task: number) => {
    edit.reset();
    setEditing(task);
  };
  const closeRemoving = () => {
    setRemoving(null);
    remove.reset();
  };

  return (
    <section aria-labelledby="tasks-title" class="tasks">
      <div class="section-head">
        <h3 id="tasks-title">Tasks</h3>
        {!adding && (
          <button
            type="button"
            class="primary"
            disabled={!canUpdate}
            onClick={() => {
              create.reset();
              setAdding(true);
            }}
          >
            New task
          </button>
        )}
      </div>
      {tasks.length === 0 && <p class="muted">No tasks yet: a schedule runs its tasks in order, each after its time offset.</p>}
      <ErrorText error={move.error} />
      <ol class="rows task-list" aria-label="Tasks">
        {tasks.map((task, index) => (
          <li key={task.id} class="card row">
            {editing === task.id ? (
              <TaskForm
                initial={task}
                idPrefix={`task-${task.id}`}
                submitLabel="Save task"
                status={edit}
                onCancel={() => setEditing(null)}
                onSubmit={(input) => edit.mutate({ task: task.id, input }, { onSuccess: () => setEditing(null) })}
              />
            ) : (
              <TaskRow
                task={task}
                canUpdate={canUpdate}
                first={index === 0}
                last={index === tasks.length - 1}
                moving={move.isPending}
                onMove={(by) => move.mutate({ task: task.id, input: { sequence_id: task.sequence_id + by } })}
                onEdit={() => startEditing(task.id)}
                onDelete={() => setRemoving(task)}
              />
            )}
          </li>
        ))}
      </ol>
      {adding && (
        <>
          <h4>New task</h4>
          <TaskForm
            initial={null}
            idPrefix="new-task"
            submitLabel="Add task"
            status={create}
            onCancel={() => setAdding(false)}
            onSubmit={(input, onSaved) => create.mutate(input, { onSuccess: onSaved })}
          />
        </>
      )}
      <ConfirmDialog
        open={removing !== null}
        title={`Delete task ${removing?.sequence_id ?? ''}?`}
        confirmLabel="Delete"
        danger
        busy={remove.isPending}
        error={remove.error}
        onConfirm={() => removing && remove.mutate(removing.id, { onSuccess: () => setRemoving(null) })}
        onCancel={closeRemoving}
      >
        <p>Later tasks move up by one.</p>
      </ConfirmDialog>
    </section>
  );
}
