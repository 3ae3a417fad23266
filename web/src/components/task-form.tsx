import { useState } from 'preact/hooks';
import type { Task, TaskAction } from '../api/types';
import { ErrorText } from './ui';

export interface TaskInput {
  action: TaskAction;
  payload: string;
  time_offset: number;
  continue_on_failure: boolean;
}

export const ACTION_LABELS: Record<TaskAction, string> = {
  command: 'Send a console command',
  power: 'Send a power action',
  backup: 'Create a backup',
  delete_files: 'Delete files',
};

const POWER_SIGNALS = [
  { value: 'start', label: 'Start the server' },
  { value: 'restart', label: 'Restart the server' },
  { value: 'stop', label: 'Stop the server' },
  { value: 'kill', label: 'Kill the server' },
];

interface Props {
  initial: Task | null;
  /** A distinct prefix for the fields' ids when several forms are on the page. */
  idPrefix: string;
  submitLabel: string;
  onSubmit(input: TaskInput): Promise<unknown>;
  onCancel?: () => void;
}

/** A task's action, payload, time offset and failure behaviour (docs/reference/schedules.md#tasks). */
export function TaskForm({ initial, idPrefix, submitLabel, onSubmit, onCancel }: Props) {
  const [action, setAction] = useState<TaskAction>(initial?.action ?? 'command');
  const [payload, setPayload] = useState(initial?.payload ?? '');
  const [offset, setOffset] = useState(String(initial?.time_offset ?? 0));
  const [continueOnFailure, setContinueOnFailure] = useState(initial?.continue_on_failure ?? false);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const changeAction = (next: TaskAction) => {
    setAction(next);
    if (next === 'power' && !POWER_SIGNALS.some((signal) => signal.value === payload)) setPayload('start');
    else if (action === 'power') setPayload('');
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await onSubmit({ action, payload, time_offset: Number(offset), continue_on_failure: continueOnFailure });
      if (!initial) {
        setPayload(action === 'power' ? 'start' : '');
        setOffset('0');
        setContinueOnFailure(false);
      }
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const payloadId = `${idPrefix}-payload`;
  return (
    <form class="card stack task-form" onSubmit={(event) => void submit(event)}>
      <div class="grid-2">
        <label>
          Action
          <select value={action} onChange={(e) => changeAction(e.currentTarget.value as TaskAction)}>
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
            onInput={(e) => setOffset(e.currentTarget.value)}
          />
        </label>
      </div>
      {action === 'command' && (
        <label for={payloadId}>
          Payload: command
          <input
            id={payloadId}
            class="mono"
            required
            maxLength={4096}
            value={payload}
            onInput={(e) => setPayload(e.currentTarget.value)}
          />
        </label>
      )}
      {action === 'power' && (
        <label for={payloadId}>
          Payload: power action
          <select id={payloadId} value={payload} onChange={(e) => setPayload(e.currentTarget.value)}>
            {POWER_SIGNALS.map((signal) => (
              <option key={signal.value} value={signal.value}>
                {signal.label}
              </option>
            ))}
          </select>
        </label>
      )}
      {action === 'backup' && (
        <label for={payloadId}>
          Payload: ignored files (one pattern per line, optional)
          <textarea id={payloadId} class="mono" rows={3} value={payload} onInput={(e) => setPayload(e.currentTarget.value)} />
        </label>
      )}
      {action === 'delete_files' && (
        <label for={payloadId}>
          Payload: files to delete (one path per line, inside the server's folder)
          <textarea
            id={payloadId}
            class="mono"
            rows={3}
            required
            value={payload}
            onInput={(e) => setPayload(e.currentTarget.value)}
          />
        </label>
      )}
      <label class="check">
        <input type="checkbox" checked={continueOnFailure} onChange={(e) => setContinueOnFailure(e.currentTarget.checked)} />
        Continue on failure
      </label>
      <ErrorText error={error} />
      <div class="actions">
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {submitLabel}
        </button>
      </div>
    </form>
  );
}
