/** The modes restored files and folders get (docs/reference/backups-and-restores.md#restoring, docs/RESTORE.md): permission bits only, never more. */

/** The mode a restored file gets: permission bits only, never setuid, setgid or sticky (docs/reference/backups-and-restores.md#restoring). */
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
