import { useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import { useCreateSchedule, useSchedules } from '../api/schedules';
import type { Schedule } from '../api/types';
import { ScheduleForm } from '../components/schedule-form';
import { ErrorText, Loading } from '../components/ui';
import { describeCron } from '../lib/cron-text';
import { dateTime, panelTimezone } from '../lib/format';
import { useServer } from '../lib/server-context';

/**
 * The Schedules section (docs/reference/schedules.md#schedules): the server's schedules with their
 * cron in words and next run, and the form for a new one, which opens the
 * schedule once it is created.
 */

const cronText = ({ cron }: Schedule) => [cron.minute, cron.hour, cron.day_of_month, cron.month, cron.day_of_week].join(' ');

export function SchedulesSection() {
  const { id, permissions } = useServer();
  const [, navigate] = useLocation();
  const [creating, setCreating] = useState(false);
  const schedules = useSchedules(id);
  const create = useCreateSchedule(id);

  return (
    <section aria-labelledby="schedules-title">
      <div class="section-head">
        <h2 id="schedules-title">Schedules</h2>
        {!creating && (
          <button type="button" class="primary" disabled={!permissions.can('schedule.create')} onClick={() => setCreating(true)}>
            New schedule
          </button>
        )}
      </div>
      {creating && (
        <ScheduleForm
          initial={null}
          submitLabel="Create schedule"
          status={create}
          onSubmit={(input) => create.mutate(input, { onSuccess: (created) => navigate(`/schedules/${created.id}`) })}
          onCancel={() => setCreating(false)}
        />
      )}
      {schedules.isPending && <Loading what="schedules" />}
      <ErrorText error={schedules.error} />
      {schedules.data?.data.length === 0 && <p class="muted">No schedules yet.</p>}
      {schedules.data && schedules.data.data.length > 0 && (
        <ul class="rows" aria-label="Schedules">
          {schedules.data.data.map(({ attributes: schedule }) => (
            <li key={schedule.id} class="card row">
              <div class="row-main">
                <Link href={`/schedules/${schedule.id}`} class="row-title">
                  {schedule.name}
                </Link>
                <span class="mono muted">{cronText(schedule)}</span>
                <span class="muted">{describeCron(schedule.cron)}</span>
              </div>
              <div class="row-meta">
                <span class={schedule.is_active ? 'badge ok' : 'badge'}>{schedule.is_active ? 'Active' : 'Inactive'}</span>
                {schedule.is_processing && <span class="badge warn">Running</span>}
                <span class="muted">Next run: {schedule.is_active ? dateTime(schedule.next_run_at, panelTimezone()) : '—'}</span>
                <span class="muted">
                  {schedule.relationships.tasks.data.length} task{schedule.relationships.tasks.data.length === 1 ? '' : 's'}
                </span>
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
