/** How a restore reports a refusal or a failure: one line a person can read. */

/** A restore refused or failed; the message is one line a person can read. The volume is as it was. */
export class RestoreError extends Error {
  override readonly name = 'RestoreError';
}

/** An entry path or link target quoted for a one-line message: control characters escaped, long ones shortened. */
export function quote(value: string): string {
  const printable = value.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return `'${printable.length > 200 ? `${printable.slice(0, 200)}...` : printable}'`;
}

export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Any failure as a RestoreError with a one-line reason (refusals already are one). */
export function asRestoreError(err: unknown, context: string): RestoreError {
  if (err instanceof RestoreError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new RestoreError(`${context}: ${oneLine(message)}`, { cause: err });
}

/** What went wrong with a system call, for a message: its errno code, else its message. */
export function errnoOrMessage(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));
}
