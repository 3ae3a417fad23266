import { useState } from 'preact/hooks';
import type { TaskInput } from '../api/schedules';
import type { Task, TaskAction } from '../api/types';
import { PayloadField, POWER_SIGNALS } from './schedules/task-payload-field';
import type { SubmitState } from './schedules/submit-state';
import { ErrorText } from './ui';

/** A task's action, payload, time offset and failure behaviour (docs/reference/schedules.md#tasks). */

export const ACTION_LABELS: Record<TaskAction, string> = {
  command: 'Send a console command',
  power: 'Send a power action',
  backup: 'Create a backup',
  delete_files: 'Delete files',
};

/** The fields as typed: the offset stays text until it is sent. */
interface TaskFields {
  action: TaskAction;
  payload: string;
  offset: string;
  continueOnFailure: boolean;
}

const fieldsOf = (initial: Task | null): TaskFields => ({
  action: initial?.action ?? 'command',
  payload: initial?.payload ?? '',
  offset: String(initial?.time_offset ?? 0),
  continueOnFailure: initial?.continue_on_failure ?? false,
});

/** Another action: a power task needs one of the signals; leaving power, its signal is no payload for the others. */
function withAction(fields: TaskFields, action: TaskAction): TaskFields {
  if (action === 'power' && !POWER_SIGNALS.some((signal) => signal.value === fields.payload))
    return { ...fields, action, payload: 'start' };
  return { ...fields, action, payload: fields.action === 'power' ? '' : fields.payload };
}

interface Props {
  initial: Task | null;
  /** A distinct prefix for the fields' ids when several forms are on the page. */
  idPrefix: string;
  submitLabel: string;
  /** The create or update mutation: pending disables the button, its error shows above it. */
  status: SubmitState;
  /** Sends the task; `onSaved` is for once it is saved (a new task's form then empties, keeping the action). */
  onSubmit(input: TaskInput, onSaved: () => void): void;
  onCancel?: () => void;
}

export function TaskForm({ initial, idPrefix, submitLabel, status, onSubmit, onCancel }: Props) {
  const [fields, setFields] = useState<TaskFields>(() => fieldsOf(initial));
  const set = (change: Partial<TaskFields>) => setFields((current) => ({ ...current, ...change }));
  const { action, payload, offset, continueOnFailure } = fields;

  const submit = (event: Event) => {
    event.preventDefault();
    const input = { action, payload, time_offset: Number(offset), continue_on_failure: continueOnFailure };
    onSubmit(input, () => {
      if (!initial) setFields({ ...fieldsOf(null), action, payload: action === 'power' ? 'start' : '' });
    });
  };

  return (
    <form class="card stack task-form" onSubmit={submit}>
      <div class="grid-2">
        <label>
          Action
          <select
            value={action}
            onChange={(e) => {
              const next = e.currentTarget.value as TaskAction;
              setFields((current) => withAction(current, next));
            }}
          >
            {(Object.keys(ACTION_LABELS) as TaskAction[]).map((value) => (
              <option key={value} value={value}>
                {ACTION_LABELS[value]}
              </option>
            ))}
          </select>
        </label>
        <label>
          Time offset (seconds)
          <input
            type="number"
            min={0}
            max={900}
            step={1}
            required
            value={offset}
            onInput={(e) => set({ offset: e.currentTarget.value })}
          />
        </label>
      </div>
      <PayloadField id={`${idPrefix}-payload`} action={action} value={payload} onChange={(value) => set({ payload: value })} />
      <label class="check">
        <input
          type="checkbox"
          checked={continueOnFailure}
          onChange={(e) => set({ continueOnFailure: e.currentTarget.checked })}
        />
        Continue on failure
      </label>
      <ErrorText error={status.error} />
      <div class="actions">
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
        <button type="submit" class="primary" disabled={status.isPending}>
          {submitLabel}
        </button>
      </div>
    </form>
  );
}
