import type { TaskAction } from '../../api/types';

/**
 * A task's payload, as its action takes it (docs/reference/schedules.md#tasks):
 * a console command, one of the four power signals, a backup's ignore
 * patterns, or the paths to delete.
 */

export const POWER_SIGNALS = [
  { value: 'start', label: 'Start the server' },
  { value: 'restart', label: 'Restart the server' },
  { value: 'stop', label: 'Stop the server' },
  { value: 'kill', label: 'Kill the server' },
];

interface PayloadFieldProps {
  id: string;
  action: TaskAction;
  value: string;
  onChange(value: string): void;
}

export function PayloadField({ id, action, value, onChange }: PayloadFieldProps) {
  switch (action) {
    case 'command':
      return (
        <label for={id}>
          Payload: command
          <input id={id} class="mono" required maxLength={4096} value={value} onInput={(e) => onChange(e.currentTarget.value)} />
        </label>
      );
    case 'power':
      return (
        <label for={id}>
          Payload: power action
          <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
            {POWER_SIGNALS.map((signal) => (
              <option key={signal.value} value={signal.value}>
                {signal.label}
              </option>
            ))}
          </select>
        </label>
      );
    case 'backup':
      return (
        <label for={id}>
          Payload: ignored files (one pattern per line, optional)
          <textarea id={id} class="mono" rows={3} value={value} onInput={(e) => onChange(e.currentTarget.value)} />
        </label>
      );
    case 'delete_files':
      return (
        <label for={id}>
          Payload: files to delete (one path per line, inside the server's folder)
          <textarea id={id} class="mono" rows={3} required value={value} onInput={(e) => onChange(e.currentTarget.value)} />
        </label>
      );
  }
}
