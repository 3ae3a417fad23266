import { randomUUID } from 'node:crypto';
import type { AppDeps } from '../../deps.js';
import { crashPoint } from '../../crash-point.js';
import type { BackupRow, ServerRow } from '../../db/schema.js';
import { conflict, notFound } from '../../http/errors.js';
import { toBoolean } from '../../http/validation.js';
import { recordActivity, SYSTEM_ACTOR, type Actor } from '../activity/activity.recorder.js';
import { daemonServer } from '../servers/servers.service.js';
import type { RestoreBackupInput } from './backups.schemas.js';
import { claimServerForRestore, findBackupById, lockServerRow, releaseServerFromRestore } from './backups.repository.js';
import { fileOperationLeases } from './file-operation-leases.js';
import { countBackupsInFlight, deleteOwnedRestore, insertRestore } from './file-operations.repository.js';
import { isVolumeChanging } from './volume-changes.js';

/**
 * Restoring a backup (docs/reference/backups-and-restores.md#restoring, docs/reference/backups-and-restores.md#durability): accepted in one transaction with its durable
 * restore row, run by the daemon in the background, finished in one transaction
 * that deletes the row (docs/RESTORE.md "Crash safety").
 */

type RestoreDeps = Pick<AppDeps, 'db' | 'clock' | 'daemon' | 'config' | 'serverEvents'>;

const NOT_RESTORABLE = 'This backup cannot be restored at this time: not completed or failed.';
const SERVER_NOT_READY = 'This server is not currently in a state that allows for a backup to be restored.';
const BACKUP_IN_PROGRESS = 'This server is currently creating a backup, please try again later.';
const FILES_CHANGING = 'Files of this server are being deleted, please try again later.';

export function isRestorable(backup: BackupRow): boolean {
  return backup.is_successful === 1 && backup.completed_at !== null;
}

/** The hex digest of a stored `sha1:<hex>` checksum, for the daemon to verify the archive against. */
export function sha1Of(checksum: string | null): string | null {
  const match = checksum ? /^sha1:([0-9a-f]{40})$/i.exec(checksum) : null;
  return match ? match[1]!.toLowerCase() : null;
}

/**
 * Accepts a restore (docs/reference/backups-and-restores.md#restoring): in one transaction, flips the server's status from
 * null to restoring_backup — a conditional UPDATE that also locks the server's
 * row, so of two concurrent calls exactly one wins, and a backup being begun
 * meanwhile is either seen here (409) or sees the restore — inserts the
 * restore's row (owner, lease) and logs `server:backup.restore`; then hands
 * the restore to the daemon in the background.
 */
export async function restoreBackup(
  deps: RestoreDeps & Pick<AppDeps, 'jobs'>,
  server: ServerRow,
  backup: BackupRow,
  actor: Actor,
  input: RestoreBackupInput,
): Promise<void> {
  if (!isRestorable(backup)) throw conflict(NOT_RESTORABLE);
  const truncate = input.truncate !== undefined && toBoolean(input.truncate);
  const now = deps.clock.now();
  const leases = fileOperationLeases(deps);
  const restoreId = randomUUID();
  const release = leases.holdRestore(restoreId);
  let accepted: BackupRow;
  try {
    accepted = await deps.db.transaction().execute(async (trx) => {
      if (!(await claimServerForRestore(trx, server.id, now))) throw conflict(SERVER_NOT_READY);
      if ((await countBackupsInFlight(trx, server.id)) > 0) throw conflict(BACKUP_IN_PROGRESS);
      // The status update above holds the row lock a delete_files is accepted under: one in flight is seen here.
      const locked = await lockServerRow(trx, server.id);
      if (locked && isVolumeChanging(locked, now)) throw conflict(FILES_CHANGING);
      // Read again under the server's lock: a concurrent delete has either committed (gone) or waits for us.
      const row = await findBackupById(trx, backup.id);
      if (!row || row.server_id !== server.id) throw notFound();
      if (!isRestorable(row)) throw conflict(NOT_RESTORABLE);
      await insertRestore(trx, {
        id: restoreId,
        server_id: server.id,
        backup_id: row.id,
        truncate: truncate ? 1 : 0,
        owner: leases.owner,
        lease_expires_at: leases.leaseUntil(),
        created_at: now,
      });
      await recordActivity(trx, {
        serverId: server.id,
        event: 'server:backup.restore',
        actor,
        properties: { name: row.name, truncate },
        timestamp: now,
      });
      return row;
    });
  } catch (err) {
    release();
    throw err;
  }
  crashPoint('restore-accepted');
  deps.jobs.run(`restore ${accepted.uuid}`, async () => {
    try {
      const error = await performRestore(deps, server, accepted, truncate, restoreId);
      if (error !== undefined) throw error;
    } finally {
      release();
    }
  });
}

/**
 * Runs an accepted restore to its end: the daemon restores (all or nothing,
 * journalled), then in one transaction the restore's row goes, the status
 * returns to null and `restore-complete` or `restore-failed` is logged
 * (system); then the daemon drops what it kept for recovery. Returns the
 * daemon's error, if any.
 */
export async function performRestore(
  deps: RestoreDeps,
  server: ServerRow,
  backup: BackupRow,
  truncate: boolean,
  restoreId: string,
): Promise<unknown> {
  const owner = fileOperationLeases(deps).owner;
  let error: unknown;
  try {
    await deps.daemon.restoreBackup(
      daemonServer(server),
      { uuid: backup.uuid, sha1: sha1Of(backup.checksum) },
      {
        truncate,
        restoreId,
        maxEntries: deps.config.restoreMaxEntries,
      },
    );
  } catch (err) {
    error = err ?? new Error('restore failed');
  }
  const now = deps.clock.now();
  const recorded = await deps.db.transaction().execute(async (trx) => {
    // Another instance took the restore over (this one looked dead): the outcome and the folder are theirs.
    if (!(await deleteOwnedRestore(trx, restoreId, owner))) return false;
    await releaseServerFromRestore(trx, server.id, now);
    await recordActivity(trx, {
      serverId: server.id,
      event: error === undefined ? 'server:backup.restore-complete' : 'server:backup.restore-failed',
      actor: SYSTEM_ACTOR,
      properties: { name: backup.name },
      timestamp: now,
    });
    return true;
  });
  crashPoint('restore-finished');
  // Live consoles hear of it as from Wings (docs/reference/power-and-console.md#websocket), whatever the outcome.
  if (recorded) deps.serverEvents?.emit({ type: 'restore-completed', serverUuid: server.uuid, successful: error === undefined });
  // Best effort: a leftover is removed by the next start's sweep.
  if (recorded) await deps.daemon.discardRestore(restoreId).catch(() => undefined);
  return error;
}
