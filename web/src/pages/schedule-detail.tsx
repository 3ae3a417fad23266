import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import { del, post, put } from '../api/client';
import type { Item, Schedule, Task } from '../api/types';
import { ScheduleForm, type ScheduleInput } from '../components/schedule-form';
import { ACTION_LABELS, TaskForm, type TaskInput } from '../components/task-form';
import { ConfirmDialog, ErrorText, Loading } from '../components/ui';
import { describeCron } from '../lib/cron-text';
import { dateTime, panelTimezone } from '../lib/format';
import { useServer } from '../lib/server-context';
import { fetchSchedule, scheduleKey, schedulesKey, schedulesUrl } from './schedules-api';

/** One schedule: edit it, run it now, delete it, and its tasks (add, edit, reorder, delete). */
export function ScheduleDetail({ scheduleId }: { scheduleId: string }) {
  const { id, permissions } = useServer();
  const client = useQueryClient();
  const [, navigate] = useLocation();
  const url = `${schedulesUrl(id)}/${encodeURIComponent(scheduleId)}`;
  const schedule = useQuery({
    queryKey: scheduleKey(id, scheduleId),
    queryFn: ({ signal }) => fetchSchedule(id, scheduleId, signal),
    refetchInterval: (query) => (query.state.data?.attributes.is_processing ? 1_000 : false),
  });
  const [runMessage, setRunMessage] = useState<string | null>(null);
  const [runError, setRunError] = useState<unknown>(null);
  const [deleting, setDeleting] = useState(false);
  const [deleteError, setDeleteError] = useState<unknown>(null);

  const refresh = () => client.invalidateQueries({ queryKey: schedulesKey(id) });
  const canUpdate = permissions.can('schedule.update');

  if (schedule.isPending) return <Loading what="the schedule" />;
  if (schedule.isError)
    return (
      <>
        <ErrorText error={schedule.error} />
        <Link href="/schedules">Back to the schedules</Link>
      </>
    );
  const current = schedule.data.attributes;
  const tasks = [...current.relationships.tasks.data.map((task) => task.attributes)].sort(
    (a, b) => a.sequence_id - b.sequence_id,
  );
  const timezone = panelTimezone();

  const save = async (input: ScheduleInput) => {
    const saved = await put<Item<'server_schedule', Schedule>>(url, input);
    client.setQueryData(scheduleKey(id, scheduleId), saved);
    await refresh();
  };

  const runNow = async () => {
    setRunError(null);
    setRunMessage(null);
    try {
      await post(`${url}/execute`);
      setRunMessage('The run has started.');
      await refresh();
    } catch (err) {
      setRunError(err);
    }
  };

  const remove = async () => {
    setDeleteError(null);
    try {
      await del(url);
      setDeleting(false);
      client.removeQueries({ queryKey: scheduleKey(id, scheduleId) });
      await refresh();
      navigate('/schedules');
    } catch (err) {
      setDeleteError(err);
    }
  };

  return (
    <section aria-labelledby="schedule-title">
      <p>
        <Link href="/schedules">← All schedules</Link>
      </p>
      <div class="section-head">
        <h2 id="schedule-title">{current.name}</h2>
        <span class={current.is_active ? 'badge ok' : 'badge'}>{current.is_active ? 'Active' : 'Inactive'}</span>
        {current.is_processing && <span class="badge warn">Running</span>}
        <div class="actions">
          <button type="button" disabled={!canUpdate || current.is_processing} onClick={() => void runNow()}>
            Run now
          </button>
          <button type="button" class="danger" disabled={!permissions.can('schedule.delete')} onClick={() => setDeleting(true)}>
            Delete schedule
          </button>
        </div>
      </div>
      <ErrorText error={runError} />
      {runMessage && (
        <p role="status" class="success">
          {runMessage}
        </p>
      )}
      <dl class="facts inline">
        <dt>Runs</dt>
        <dd>{describeCron(current.cron)}</dd>
        <dt>Last run</dt>
        <dd>{current.last_run_at ? `${dateTime(current.last_run_at, timezone)} (${timezone})` : 'Never'}</dd>
        <dt>Next run</dt>
        <dd>{current.is_active && current.next_run_at ? `${dateTime(current.next_run_at, timezone)} (${timezone})` : '—'}</dd>
      </dl>

      <h3>Edit schedule</h3>
      <ScheduleForm key={current.id} initial={current} submitLabel="Save schedule" disabled={!canUpdate} onSubmit={save} />

      <Tasks
        scheduleUrl={url}
        tasks={tasks}
        canUpdate={canUpdate}
        onChanged={async () => {
          await client.invalidateQueries({ queryKey: scheduleKey(id, scheduleId) });
          await refresh();
        }}
      />

      <ConfirmDialog
        open={deleting}
        title={`Delete the schedule “${current.name}”?`}
        confirmLabel="Delete"
        danger
        error={deleteError}
        onConfirm={() => void remove()}
        onCancel={() => setDeleting(false)}
      >
        <p>The schedule and its {tasks.length} tasks are removed for good.</p>
      </ConfirmDialog>
    </section>
  );
}

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

interface TasksProps {
  scheduleUrl: string;
  tasks: Task[];
  canUpdate: boolean;
  onChanged(): Promise<unknown>;
}

function Tasks({ scheduleUrl, tasks, canUpdate, onChanged }: TasksProps) {
  const [editing, setEditing] = useState<number | null>(null);
  const [adding, setAdding] = useState(false);
  const [removing, setRemoving] = useState<Task | null>(null);
  const [error, setError] = useState<unknown>(null);
  const taskUrl = (task: Task) => `${scheduleUrl}/tasks/${task.id}`;

  const move = async (task: Task, by: number) => {
    setError(null);
    try {
      await put(taskUrl(task), { sequence_id: task.sequence_id + by });
      await onChanged();
    } catch (err) {
      setError(err);
    }
  };

  const remove = async () => {
    if (!removing) return;
    setError(null);
    try {
      await del(taskUrl(removing));
      setRemoving(null);
      await onChanged();
    } catch (err) {
      setError(err);
    }
  };

  return (
    <section aria-labelledby="tasks-title" class="tasks">
      <div class="section-head">
        <h3 id="tasks-title">Tasks</h3>
        {!adding && (
          <button type="button" class="primary" disabled={!canUpdate} onClick={() => setAdding(true)}>
            New task
          </button>
        )}
      </div>
      {tasks.length === 0 && <p class="muted">No tasks yet: a schedule runs its tasks in order, each after its time offset.</p>}
      <ErrorText error={removing ? null : error} />
      <ol class="rows task-list" aria-label="Tasks">
        {tasks.map((task, index) => (
          <li key={task.id} class="card row">
            {editing === task.id ? (
              <TaskForm
                initial={task}
                idPrefix={`task-${task.id}`}
                submitLabel="Save task"
                onCancel={() => setEditing(null)}
                onSubmit={async (input: TaskInput) => {
                  await put(taskUrl(task), input);
                  setEditing(null);
                  await onChanged();
                }}
              />
            ) : (
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
                    disabled={!canUpdate || index === 0}
                    onClick={() => void move(task, -1)}
                  >
                    ↑
                  </button>
                  <button
                    type="button"
                    aria-label={`Move task ${task.sequence_id} down`}
                    disabled={!canUpdate || index === tasks.length - 1}
                    onClick={() => void move(task, 1)}
                  >
                    ↓
                  </button>
                  <button
                    type="button"
                    aria-label={`Edit task ${task.sequence_id}`}
                    disabled={!canUpdate}
                    onClick={() => setEditing(task.id)}
                  >
                    Edit
                  </button>
                  <button
                    type="button"
                    class="danger"
                    aria-label={`Delete task ${task.sequence_id}`}
                    disabled={!canUpdate}
                    onClick={() => setRemoving(task)}
                  >
                    Delete
                  </button>
                </div>
              </>
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
            onCancel={() => setAdding(false)}
            onSubmit={async (input: TaskInput) => {
              await post(`${scheduleUrl}/tasks`, input);
              await onChanged();
            }}
          />
        </>
      )}
      <ConfirmDialog
        open={removing !== null}
        title={`Delete task ${removing?.sequence_id ?? ''}?`}
        confirmLabel="Delete"
        danger
        error={removing ? error : null}
        onConfirm={() => void remove()}
        onCancel={() => {
          setRemoving(null);
          setError(null);
        }}
      >
        <p>Later tasks move up by one.</p>
      </ConfirmDialog>
    </section>
  );
}
