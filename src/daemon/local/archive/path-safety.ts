/**
 * The lexical rules every archive entry's path and link target must pass
 * before anything is written for it (docs/reference/backups-and-restores.md#restoring, docs/RESTORE.md). Pure
 * functions: no file system access.
 */
import { RestoreError, quote } from './restore-error.js';

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
