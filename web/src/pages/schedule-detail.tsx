import { useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import { useDeleteSchedule, useRunSchedule, useSchedule, useUpdateSchedule } from '../api/schedules';
import type { Schedule } from '../api/types';
import { ScheduleForm } from '../components/schedule-form';
import { TaskList } from '../components/schedules/task-list';
import { ConfirmDialog, ErrorText, Loading } from '../components/ui';
import { describeCron } from '../lib/cron-text';
import { dateTime, panelTimezone } from '../lib/format';
import { useServer } from '../lib/server-context';

/**
 * One schedule (docs/reference/schedules.md#schedules): edit it, run it now,
 * delete it after a confirmation, and its tasks (components/schedules/task-list.tsx).
 */

export function ScheduleDetail({ scheduleId }: { scheduleId: string }) {
  const schedule = useSchedule(useServer().id, scheduleId);
  if (schedule.isPending) return <Loading what="the schedule" />;
  if (schedule.isError)
    return (
      <>
        <ErrorText error={schedule.error} />
        <Link href="/schedules">Back to the schedules</Link>
      </>
    );
  return <ScheduleView schedule={schedule.data.attributes} scheduleId={scheduleId} />;
}

function ScheduleView({ schedule, scheduleId }: { schedule: Schedule; scheduleId: string }) {
  const { id, permissions } = useServer();
  const [, navigate] = useLocation();
  const [deleting, setDeleting] = useState(false);
  const save = useUpdateSchedule(id, scheduleId);
  const run = useRunSchedule(id, scheduleId);
  const remove = useDeleteSchedule(id, scheduleId);
  const canUpdate = permissions.can('schedule.update');
  const tasks = schedule.relationships.tasks.data.map((task) => task.attributes).sort((a, b) => a.sequence_id - b.sequence_id);
  const timezone = panelTimezone();

  return (
    <section aria-labelledby="schedule-title">
      <p>
        <Link href="/schedules">← All schedules</Link>
      </p>
      <div class="section-head">
        <h2 id="schedule-title">{schedule.name}</h2>
        <span class={schedule.is_active ? 'badge ok' : 'badge'}>{schedule.is_active ? 'Active' : 'Inactive'}</span>
        {schedule.is_processing && <span class="badge warn">Running</span>}
        <div class="actions">
          <button type="button" disabled={!canUpdate || schedule.is_processing || run.isPending} onClick={() => run.mutate()}>
            Run now
          </button>
          <button
            type="button"
            class="danger"
            disabled={!permissions.can('schedule.delete')}
            onClick={() => {
              remove.reset();
              setDeleting(true);
            }}
          >
            Delete schedule
          </button>
        </div>
      </div>
      <ErrorText error={run.error} />
      {run.isSuccess && (
        <p role="status" class="success">
          The run has started.
        </p>
      )}
      <dl class="facts inline">
        <dt>Runs</dt>
        <dd>{describeCron(schedule.cron)}</dd>
        <dt>Last run</dt>
        <dd>{schedule.last_run_at ? `${dateTime(schedule.last_run_at, timezone)} (${timezone})` : 'Never'}</dd>
        <dt>Next run</dt>
        <dd>{schedule.is_active && schedule.next_run_at ? `${dateTime(schedule.next_run_at, timezone)} (${timezone})` : '—'}</dd>
      </dl>

      <h3>Edit schedule</h3>
      <ScheduleForm
        key={schedule.id}
        initial={schedule}
        submitLabel="Save schedule"
        disabled={!canUpdate}
        status={save}
        onSubmit={(input) => save.mutate(input)}
      />

      <TaskList scheduleId={scheduleId} tasks={tasks} canUpdate={canUpdate} />

      <ConfirmDialog
        open={deleting}
        title={`Delete the schedule “${schedule.name}”?`}
        confirmLabel="Delete"
        danger
        busy={remove.isPending}
        error={remove.error}
        onConfirm={() => remove.mutate(undefined, { onSuccess: () => navigate('/schedules') })}
        onCancel={() => setDeleting(false)}
      >
        <p>The schedule and its {tasks.length} tasks are removed for good.</p>
      </ConfirmDialog>
    </section>
  );
}
