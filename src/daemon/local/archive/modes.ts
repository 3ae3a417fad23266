/** The modes restored files and folders get (SPEC 4, docs/RESTORE.md): permission bits only, never more. */

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
