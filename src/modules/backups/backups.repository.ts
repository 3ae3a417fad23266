import type { Queryable } from '../../db/database.js';
import type { BackupRow, NewBackup, ServerRow } from '../../db/schema.js';

/** SQL for backups, and the server-row updates a backup or a restore needs. */

export async function findBackupsPage(db: Queryable, serverId: number, limit: number, offset: number): Promise<BackupRow[]> {
  return db
    .selectFrom('backups')
    .selectAll()
    .where('server_id', '=', serverId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute();
}

export async function countBackups(db: Queryable, serverId: number): Promise<number> {
  const { total } = await db
    .selectFrom('backups')
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .where('server_id', '=', serverId)
    .executeTakeFirstOrThrow();
  return Number(total);
}

/** Backups that finished successfully or are still running: what counts toward the backup limit. */
export async function countNonFailedBackups(db: Queryable, serverId: number): Promise<number> {
  const { total } = await db
    .selectFrom('backups')
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .where('server_id', '=', serverId)
    .where((eb) => eb.or([eb('is_successful', '=', 1), eb('completed_at', 'is', null)]))
    .executeTakeFirstOrThrow();
  return Number(total);
}

export async function findBackupById(db: Queryable, id: number): Promise<BackupRow | undefined> {
  return db.selectFrom('backups').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A backup by UUID (lower case), only if it belongs to `serverId`. */
export async function findBackupOfServer(db: Queryable, uuid: string, serverId: number): Promise<BackupRow | undefined> {
  return db.selectFrom('backups').selectAll().where('uuid', '=', uuid).where('server_id', '=', serverId).executeTakeFirst();
}

/** The oldest unlocked, successful backup: the one a scheduled backup replaces when the limit is reached. */
export async function findOldestRotatableBackup(db: Queryable, serverId: number): Promise<BackupRow | undefined> {
  return db
    .selectFrom('backups')
    .selectAll()
    .where('server_id', '=', serverId)
    .where('is_successful', '=', 1)
    .where('completed_at', 'is not', null)
    .where('is_locked', '=', 0)
    .orderBy('created_at', 'asc')
    .orderBy('id', 'asc')
    .limit(1)
    .executeTakeFirst();
}

export async function insertBackup(db: Queryable, values: NewBackup): Promise<BackupRow> {
  return db.insertInto('backups').values(values).returningAll().executeTakeFirstOrThrow();
}

export async function markBackupFinished(
  db: Queryable,
  id: number,
  result: { checksum: string | null; bytes: number; successful: boolean; completedAt: number },
): Promise<BackupRow | undefined> {
  return (
    db
      .updateTable('backups')
      .set({
        checksum: result.checksum,
        bytes: result.bytes,
        is_successful: result.successful ? 1 : 0,
        completed_at: result.completedAt,
      })
      .where('id', '=', id)
      // Recovery may have marked it failed meanwhile (its owner looked dead): that verdict stands.
      .where('completed_at', 'is', null)
      .returningAll()
      .executeTakeFirst()
  );
}

/** Flips is_locked in one statement, so two concurrent toggles cannot both read the old value. */
export async function toggleBackupLock(db: Queryable, id: number): Promise<BackupRow | undefined> {
  return db
    .updateTable('backups')
    .set((eb) => ({ is_locked: eb(eb.val(1), '-', eb.ref('is_locked')) }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteBackupRow(db: Queryable, id: number): Promise<boolean> {
  const result = await db.deleteFrom('backups').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/**
 * Locks the server's row until the transaction ends and returns it as it is now.
 * A no-op UPDATE rather than `SELECT ... FOR UPDATE`, so the same statement takes
 * the row lock on PostgreSQL and the write lock on SQLite. Backup creation,
 * deletion and restore claims on one server thereby run one after another.
 */
export async function lockServerRow(db: Queryable, serverId: number): Promise<ServerRow | undefined> {
  return db
    .updateTable('servers')
    .set((eb) => ({ backup_limit: eb.ref('backup_limit') }))
    .where('id', '=', serverId)
    .returningAll()
    .executeTakeFirst();
}

/** Null → restoring_backup, only if the status is still null; false when another change got there first. */
export async function claimServerForRestore(db: Queryable, serverId: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('servers')
    .set({ status: 'restoring_backup', updated_at: now })
    .where('id', '=', serverId)
    .where('status', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** restoring_backup → null; leaves any other status (an admin's suspension meanwhile) alone. */
export async function releaseServerFromRestore(db: Queryable, serverId: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('servers')
    .set({ status: null, updated_at: now })
    .where('id', '=', serverId)
    .where('status', '=', 'restoring_backup')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
