/**
 * The lexical rules every archive entry must pass before anything is written
 * for it (SPEC 4, docs/RESTORE.md). Pure functions: no file system access.
 */

/** A restore refused or failed; the message is one line a person can read. The volume is as it was. */
export class RestoreError extends Error {
  override readonly name = 'RestoreError';
}

/** An entry path or link target quoted for a one-line message: control characters escaped, long ones shortened. */
export function quote(value: string): string {
  const printable = value.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return `'${printable.length > 200 ? `${printable.slice(0, 200)}...` : printable}'`;
}

/**
 * The segments of an entry path below the volume root ('' and '.' segments dropped),
 * or a RestoreError when the path is absolute or has a `..` segment. An empty list
 * is the volume root itself.
 */
export function entrySegments(entryPath: string): string[] {
  if (entryPath.startsWith('/')) throw new RestoreError(`archive entry ${quote(entryPath)} has an absolute path`);
  const segments = entryPath.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..')) throw new RestoreError(`archive entry ${quote(entryPath)} leaves the volume`);
  return segments;
}

/**
 * Refuses a symlink whose target is absolute or has a `..` segment anywhere.
 *
 * This is stricter than "the target resolves inside the volume" on purpose: a
 * lexical check of each link on its own is not enough, because the kernel
 * resolves a symlink before it applies the `..` that follows it. With
 * `d -> sub/..` and `e -> d/..`, both targets look inside the volume when read
 * as text (`sub/..` is `.`, and `d/..` is `.`), yet `e` resolves as
 * `d/..` = `(sub/..)/..` = the volume's parent. Targets that only ever descend
 * (relative, no `..`) cannot climb, however they are chained.
 */
export function checkSymlinkTarget(entryPath: string, target: string): void {
  if (target.startsWith('/')) {
    throw new RestoreError(`archive entry ${quote(entryPath)} is a symlink to the absolute path ${quote(target)}`);
  }
  if (target.split('/').includes('..')) {
    throw new RestoreError(`archive entry ${quote(entryPath)} is a symlink to ${quote(target)}, which climbs with '..'`);
  }
}

/** Normalises a recorded checksum (`<hex>` or `sha1:<hex>`, any case) to lowercase hex. */
export function normaliseSha1(recorded: string): string {
  const hex = recorded
    .trim()
    .replace(/^sha1:/i, '')
    .toLowerCase();
  if (!/^[0-9a-f]{40}$/.test(hex)) throw new RestoreError(`the recorded checksum ${quote(recorded)} is not a sha1`);
  return hex;
}

/** The mode a restored file gets: permission bits only, never setuid, setgid or sticky (SPEC 4). */
export function fileMode(archived: number | undefined): number {
  return archived === undefined ? 0o644 : archived & 0o777;
}

/**
 * The mode a restored directory gets: its permission bits, plus full access for
 * the owner (the service's own user), so the restore can always fill, merge and
 * later remove it, and the server can write into its own folders.
 */
export function directoryMode(archived: number | undefined): number {
  return archived === undefined ? 0o755 : (archived & 0o777) | 0o700;
}
