import { useMemo, useState } from 'preact/hooks';
import type { ScheduleInput } from '../api/schedules';
import type { CronFields, Schedule } from '../api/types';
import { previewCron } from '../lib/cron-text';
import { dateTime, panelTimezone } from '../lib/format';
import type { SubmitState } from './schedules/submit-state';
import { ErrorText } from './ui';

/**
 * The form that creates a schedule and edits one (docs/reference/schedules.md#schedules): it holds
 * the fields as typed and sends them through the page's mutation, whose
 * state it shows.
 */

const CRON_FIELDS: { key: keyof CronFields; label: string; hint: string }[] = [
  { key: 'minute', label: 'Minute', hint: '0-59' },
  { key: 'hour', label: 'Hour', hint: '0-23' },
  { key: 'day_of_month', label: 'Day of month', hint: '1-31' },
  { key: 'month', label: 'Month', hint: '1-12, JAN-DEC' },
  { key: 'day_of_week', label: 'Day of week', hint: '0-7, SUN-SAT' },
];

interface Props {
  initial: Schedule | null;
  submitLabel: string;
  disabled?: boolean;
  /** The create or update mutation: pending disables the button, its error shows above it, success says "Saved.". */
  status: SubmitState;
  onSubmit(input: ScheduleInput): void;
  onCancel?: () => void;
}

const fieldsOf = (initial: Schedule | null): ScheduleInput => ({
  name: initial?.name ?? '',
  minute: initial?.cron.minute ?? '0',
  hour: initial?.cron.hour ?? '*',
  day_of_month: initial?.cron.day_of_month ?? '*',
  month: initial?.cron.month ?? '*',
  day_of_week: initial?.cron.day_of_week ?? '*',
  is_active: initial?.is_active ?? true,
  only_when_online: initial?.only_when_online ?? false,
});

/** The next runs of the five fields, worked out again only when one of them (or the zone) changes. */
function useCronPreview({ minute, hour, day_of_month, month, day_of_week }: CronFields, timezone: string) {
  return useMemo(
    () => previewCron({ minute, hour, day_of_month, month, day_of_week }, timezone),
    [minute, hour, day_of_month, month, day_of_week, timezone],
  );
}

/**
 * A schedule's name, its five cron fields and switches, with the expression in
 * words and its next five runs in the panel's time zone, worked out as you
 * type by the panel's own cron code.
 */
export function ScheduleForm({ initial, submitLabel, disabled, status, onSubmit, onCancel }: Props) {
  const timezone = panelTimezone();
  const [input, setInput] = useState<ScheduleInput>(() => fieldsOf(initial));
  // What was sent last: "Saved." holds while the fields are still what was saved (any edit makes a new object).
  const [submitted, setSubmitted] = useState<ScheduleInput | null>(null);
  const preview = useCronPreview(input, timezone);
  const set = <K extends keyof ScheduleInput>(key: K, value: ScheduleInput[K]) =>
    setInput((current) => ({ ...current, [key]: value }));

  const submit = (event: Event) => {
    event.preventDefault();
    setSubmitted(input);
    onSubmit(input);
  };

  const invalidField = preview.ok ? null : preview.field;
  return (
    <form class="card stack schedule-form" onSubmit={submit}>
      <label>
        Name
        <input
          required
          maxLength={191}
          value={input.name}
          disabled={disabled}
          onInput={(e) => set('name', e.currentTarget.value)}
        />
      </label>
      <fieldset class="cron">
        <legend>When it runs (cron, in {timezone})</legend>
        {CRON_FIELDS.map(({ key, label, hint }) => (
          <label key={key}>
            {label}
            <input
              class="mono"
              required
              value={input[key]}
              disabled={disabled}
              aria-invalid={invalidField === key || invalidField === 'cron' ? 'true' : undefined}
              aria-describedby="cron-preview"
              onInput={(e) => set(key, e.currentTarget.value)}
            />
            <small class="muted">{hint}</small>
          </label>
        ))}
      </fieldset>
      <div id="cron-preview" class="cron-preview" aria-live="polite">
        {preview.ok ? (
          <>
            <p class="cron-description">{preview.description}</p>
            <h3>Next runs</h3>
            <ol class="next-runs" aria-label="Next runs">
              {preview.next.map((date) => (
                <li key={date.getTime()}>
                  <time dateTime={date.toISOString()}>{dateTime(date, timezone)}</time>
                </li>
              ))}
            </ol>
          </>
        ) : (
          <p class="error">{preview.message}</p>
        )}
      </div>
      <label class="check">
        <input
          type="checkbox"
          checked={input.is_active}
          disabled={disabled}
          onChange={(e) => set('is_active', e.currentTarget.checked)}
        />
        Active
      </label>
      <label class="check">
        <input
          type="checkbox"
          checked={input.only_when_online}
          disabled={disabled}
          onChange={(e) => set('only_when_online', e.currentTarget.checked)}
        />
        Only when the server is online
      </label>
      <ErrorText error={status.error} />
      {status.isSuccess && submitted === input && (
        <p role="status" class="success">
          Saved.
        </p>
      )}
      <div class="actions">
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
        <button type="submit" class="primary" disabled={status.isPending || disabled}>
          {submitLabel}
        </button>
      </div>
    </form>
  );
}
