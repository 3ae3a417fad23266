import { useEffect, useState } from 'preact/hooks';
import { ConfirmDialog } from './ui';

/**
 * The Files page's questions, on the console's ConfirmDialog (the browser's
 * modal <dialog>): a name or path (new folder, new file, rename and move)
 * and permissions (octal and the nine boxes, kept in step). Each shows the
 * API's error inside itself, where the user acted.
 */

interface NameDialogProps {
  open: boolean;
  title: string;
  label: string;
  confirmLabel: string;
  initial: string;
  hint?: string;
  busy: boolean;
  error: unknown;
  onConfirm(value: string): void;
  onCancel(): void;
}

export function NameDialog({
  open,
  title,
  label,
  confirmLabel,
  initial,
  hint,
  busy,
  error,
  onConfirm,
  onCancel,
}: NameDialogProps) {
  const [value, setValue] = useState(initial);
  useEffect(() => {
    if (open) setValue(initial);
  }, [open, initial]);
  return (
    <ConfirmDialog
      open={open}
      title={title}
      confirmLabel={confirmLabel}
      busy={busy || value.trim() === ''}
      error={error}
      onConfirm={() => onConfirm(value.trim())}
      onCancel={onCancel}
    >
      <label>
        {label}
        <input
          class="mono"
          value={value}
          autoComplete="off"
          spellcheck={false}
          onInput={(e) => setValue(e.currentTarget.value)}
        />
      </label>
      {hint && <p class="muted small">{hint}</p>}
    </ConfirmDialog>
  );
}

const WHO = [
  { name: 'Owner', shift: 6 },
  { name: 'Group', shift: 3 },
  { name: 'Others', shift: 0 },
] as const;
const WHAT = [
  { name: 'Read', bit: 4 },
  { name: 'Write', bit: 2 },
  { name: 'Execute', bit: 1 },
] as const;

/** Three octal digits, at most 777 (docs/reference/files-and-sftp.md: no setuid, setgid or sticky bit). */
const isOctalMode = (text: string) => /^[0-7]{3}$/.test(text);

interface ChmodDialogProps {
  open: boolean;
  names: readonly string[];
  initial: string;
  busy: boolean;
  error: unknown;
  onConfirm(mode: string): void;
  onCancel(): void;
}

export function ChmodDialog({ open, names, initial, busy, error, onConfirm, onCancel }: ChmodDialogProps) {
  const [text, setText] = useState(initial);
  useEffect(() => {
    if (open) setText(initial);
  }, [open, initial]);
  const valid = isOctalMode(text);
  const bits = valid ? parseInt(text, 8) : 0;
  const setBit = (mask: number, on: boolean) => setText(((on ? bits | mask : bits & ~mask) & 0o777).toString(8).padStart(3, '0'));
  const subject = names.length === 1 ? `“${names[0]}”` : `${names.length} entries`;
  return (
    <ConfirmDialog
      open={open}
      title={`Permissions of ${subject}`}
      confirmLabel="Set permissions"
      busy={busy || !valid}
      error={error}
      onConfirm={() => onConfirm(text)}
      onCancel={onCancel}
    >
      <label>
        Mode (octal)
        <input
          class="mono"
          inputMode="numeric"
          maxLength={3}
          value={text}
          aria-invalid={!valid}
          aria-describedby="chmod-hint"
          onInput={(e) => setText(e.currentTarget.value.trim())}
        />
      </label>
      <p id="chmod-hint" class="muted small">
        Three digits from 0 to 7, for owner, group and others.
      </p>
      <div class="chmod-grid">
        {WHO.map((who) => (
          <fieldset key={who.name}>
            <legend>{who.name}</legend>
            {WHAT.map((what) => {
              const mask = what.bit << who.shift;
              return (
                <label key={what.name} class="check">
                  <input
                    type="checkbox"
                    checked={(bits & mask) !== 0}
                    disabled={!valid}
                    aria-label={`${who.name} ${what.name.toLowerCase()}`}
                    onChange={(e) => setBit(mask, e.currentTarget.checked)}
                  />
                  {what.name}
                </label>
              );
            })}
          </fieldset>
        ))}
      </div>
    </ConfirmDialog>
  );
}
