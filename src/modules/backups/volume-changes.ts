import type { AppDeps } from '../../deps.js';
import type { DaemonServer } from '../../daemon/daemon.js';
import type { ServerRow } from '../../db/schema.js';
import { conflict, notFound } from '../../http/errors.js';
import { lockServerRow } from './backups.repository.js';
import { FILE_OPERATION_LEASE_MS } from './file-operation-leases.js';
import { beginVolumeChange, countBackupsInFlight, endVolumeChange, renewVolumeChange } from './file-operations.repository.js';

/**
 * Changes the panel makes to a server's volume (a `delete_files` task), kept
 * apart from the backups and restores of that server (docs/reference/backups-and-restores.md#durability, docs/RESTORE.md
 * "One file operation per server").
 *
 * Why no interleaving lets a changed volume into a successful backup: a
 * change is accepted in a transaction that holds the server's row lock,
 * refuses when a backup is in flight, and commits its counter bump and
 * in-flight mark *before* any file is touched; a backup is begun under the
 * same lock, refuses while a change is in flight, and records the counter.
 * Those two transactions run one after the other, so for a deletion that
 * overlaps the writing of an archive, either the change was accepted first
 * (the backup then sees it in flight and is refused) or the backup began
 * first (the change then sees it in flight and is refused). What slips past
 * the guard (a change whose lease lapsed while it went on, a change made by
 * some other path that only bumps the counter) moves the counter, and the
 * backup, which compares it once its archive is written, is recorded failed.
 */

export type VolumeChangeDeps = Pick<AppDeps, 'db' | 'clock' | 'daemon'>;

const BACKUP_IN_PROGRESS = 'This server is currently creating a backup';
const RESTORING = 'This server is currently restoring a backup';
const RENEW_EVERY_MS = 10_000;

/** A change of the volume is going on (its lease not lapsed): a backup or a restore must wait. */
export function isVolumeChanging(server: ServerRow, now: number): boolean {
  return (
    server.volume_changes_in_flight > 0 && server.volume_change_lease_until !== null && server.volume_change_lease_until >= now
  );
}

/**
 * Deletes `files` from the server's volume, unless a backup is being written
 * or a restore runs (a conflict, and nothing deleted).
 */
export async function deleteServerFiles(
  deps: VolumeChangeDeps,
  serverId: number,
  target: DaemonServer,
  files: string[],
): Promise<void> {
  await changeServerVolume(deps, serverId, 'no files were deleted', () => deps.daemon.deleteFiles(target, files));
}

/**
 * Runs `work`, a change of the server's volume (a file route, an SFTP write, a
 * `delete_files` task), unless a backup is being written or a restore runs:
 * then a conflict (409) saying `refusal` ("no files were deleted"), and
 * `work` never runs. The in-flight mark is renewed while it works and dropped
 * when it is done.
 */
export async function changeServerVolume<T>(
  deps: VolumeChangeDeps,
  serverId: number,
  refusal: string,
  work: () => Promise<T>,
): Promise<T> {
  await deps.db.transaction().execute(async (trx) => {
    const current = await lockServerRow(trx, serverId);
    if (!current) throw notFound();
    if (current.status === 'restoring_backup') throw conflict(`${RESTORING}; ${refusal}.`);
    if ((await countBackupsInFlight(trx, serverId)) > 0) throw conflict(`${BACKUP_IN_PROGRESS}; ${refusal}.`);
    const now = deps.clock.now();
    await beginVolumeChange(trx, serverId, now, now + FILE_OPERATION_LEASE_MS);
  });
  const renewal = setInterval(() => {
    // A missed renewal only lets the lease lapse sooner; the end bump still catches a backup that ends after it.
    renewVolumeChange(deps.db, serverId, deps.clock.now() + FILE_OPERATION_LEASE_MS).catch(() => undefined);
  }, RENEW_EVERY_MS);
  renewal.unref();
  try {
    return await work();
  } finally {
    clearInterval(renewal);
    // If this fails (the database is gone), the mark lapses with its lease.
    await endVolumeChange(deps.db, serverId).catch(() => undefined);
  }
}
