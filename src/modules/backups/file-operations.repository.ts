import type { Queryable } from '../../db/database.js';
import type { BackupRestoreRow, BackupRow } from '../../db/schema.js';

/**
 * SQL for who is doing what to a server's files (migration 005): the restore
 * rows, the owners and leases of restores and backups in progress, and what
 * recovery looks for (docs/RESTORE.md "Crash safety").
 */

export async function insertRestore(db: Queryable, row: BackupRestoreRow): Promise<void> {
  await db.insertInto('backup_restores').values(row).execute();
}

export async function findRestoreOfServer(db: Queryable, serverId: number): Promise<BackupRestoreRow | undefined> {
  return db.selectFrom('backup_restores').selectAll().where('server_id', '=', serverId).executeTakeFirst();
}

/** Deletes the restore row, only while `owner` holds it; false when another instance took it over. */
export async function deleteOwnedRestore(db: Queryable, id: string, owner: string): Promise<boolean> {
  const result = await db.deleteFrom('backup_restores').where('id', '=', id).where('owner', '=', owner).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

export async function deleteRestoreOfServer(db: Queryable, serverId: number): Promise<BackupRestoreRow | undefined> {
  return db.deleteFrom('backup_restores').where('server_id', '=', serverId).returningAll().executeTakeFirst();
}

/** Which of `ids` have a restore row. */
export async function findExistingRestoreIds(db: Queryable, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('backup_restores').select('id').where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}

/** Backups of the server still being written: a restore must wait for them (docs/reference/backups-and-restores.md#durability). */
export async function countBackupsInFlight(db: Queryable, serverId: number): Promise<number> {
  const { total } = await db
    .selectFrom('backups')
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .where('server_id', '=', serverId)
    .where('completed_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(total);
}

/** Renews the leases of the restores and backups this instance is working on. */
export async function renewLeases(
  db: Queryable,
  held: { restores: readonly string[]; backups: readonly number[] },
  owner: string,
  until: number,
): Promise<void> {
  if (held.restores.length > 0) {
    await db
      .updateTable('backup_restores')
      .set({ lease_expires_at: until })
      .where('id', 'in', held.restores)
      .where('owner', '=', owner)
      .execute();
  }
  if (held.backups.length > 0) {
    await db
      .updateTable('backups')
      .set({ lease_expires_at: until })
      .where('id', 'in', held.backups)
      .where('owner', '=', owner)
      .where('completed_at', 'is', null)
      .execute();
  }
}

/** The owners of restores and of backups in progress: recovery asks which of them died on this machine. */
export async function findFileOperationOwners(db: Queryable): Promise<string[]> {
  const [restores, backups] = await Promise.all([
    db.selectFrom('backup_restores').select('owner').distinct().execute(),
    db
      .selectFrom('backups')
      .select('owner')
      .distinct()
      .where('completed_at', 'is', null)
      .where('owner', 'is not', null)
      .execute(),
  ]);
  return [...new Set([...restores.map((r) => r.owner), ...backups.map((r) => r.owner!)])];
}

/** Restores whose owner is dead (`deadOwners`) or whose lease ran out. */
export async function findAbandonedRestores(
  db: Queryable,
  opts: { now: number; deadOwners: readonly string[] },
): Promise<BackupRestoreRow[]> {
  return db
    .selectFrom('backup_restores')
    .selectAll()
    .where((eb) => {
      const expired = eb('lease_expires_at', '<', opts.now);
      return opts.deadOwners.length > 0 ? eb.or([expired, eb('owner', 'in', opts.deadOwners)]) : expired;
    })
    .orderBy('created_at')
    .limit(100)
    .execute();
}

/** Moves a restore to `owner`, only if `from` still holds it (of two instances recovering it, one wins). */
export async function takeOverRestore(db: Queryable, id: string, from: string, owner: string, leaseExpiresAt: number) {
  const result = await db
    .updateTable('backup_restores')
    .set({ owner, lease_expires_at: leaseExpiresAt })
    .where('id', '=', id)
    .where('owner', '=', from)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Hands a restore back unchanged (it was not on this node). */
export async function giveBackRestore(db: Queryable, row: BackupRestoreRow, from: string): Promise<void> {
  await db
    .updateTable('backup_restores')
    .set({ owner: row.owner, lease_expires_at: row.lease_expires_at })
    .where('id', '=', row.id)
    .where('owner', '=', from)
    .execute();
}

/** Backups still being written whose owner is dead, unknown (begun before migration 005) or out of lease. */
export async function findAbandonedBackups(
  db: Queryable,
  opts: { now: number; deadOwners: readonly string[] },
): Promise<BackupRow[]> {
  return db
    .selectFrom('backups')
    .selectAll()
    .where('completed_at', 'is', null)
    .where((eb) => {
      const lapsed = [eb('owner', 'is', null), eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', opts.now)];
      if (opts.deadOwners.length > 0) lapsed.push(eb('owner', 'in', opts.deadOwners));
      return eb.or(lapsed);
    })
    .orderBy('id')
    .limit(100)
    .execute();
}

/** Marks a backup still in progress as failed; undefined when it finished (or failed) meanwhile. */
export async function failBackupInFlight(db: Queryable, id: number, now: number): Promise<BackupRow | undefined> {
  return db
    .updateTable('backups')
    .set({ is_successful: 0, completed_at: now, checksum: null, bytes: 0 })
    .where('id', '=', id)
    .where('completed_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** The uuids of the backups still in progress among `uuids`. */
export async function findBackupsInFlight(db: Queryable, uuids: readonly string[]): Promise<Set<string>> {
  if (uuids.length === 0) return new Set();
  const rows = await db
    .selectFrom('backups')
    .select('uuid')
    .where('uuid', 'in', uuids)
    .where('completed_at', 'is', null)
    .execute();
  return new Set(rows.map((r) => r.uuid));
}

/**
 * A change of the server's volume by the panel (delete_files) begins: the
 * counter a backup compares moves on, and the change is counted in flight
 * under a lease. A count whose lease lapsed is stale (its changer died) and
 * starts again from this one. Run after lockServerRow, in that transaction.
 */
export async function beginVolumeChange(db: Queryable, serverId: number, now: number, leaseUntil: number): Promise<void> {
  await db
    .updateTable('servers')
    .set((eb) => ({
      volume_changes: eb('volume_changes', '+', 1),
      volume_changes_in_flight: eb
        .case()
        .when(eb.or([eb('volume_change_lease_until', 'is', null), eb('volume_change_lease_until', '<', now)]))
        .then(1)
        .else(eb('volume_changes_in_flight', '+', 1))
        .end(),
      volume_change_lease_until: leaseUntil,
    }))
    .where('id', '=', serverId)
    .execute();
}

/** Keeps the changes in flight alive while one of them goes on. */
export async function renewVolumeChange(db: Queryable, serverId: number, leaseUntil: number): Promise<void> {
  await db
    .updateTable('servers')
    .set({ volume_change_lease_until: leaseUntil })
    .where('id', '=', serverId)
    .where('volume_changes_in_flight', '>', 0)
    .where((eb) => eb.or([eb('volume_change_lease_until', 'is', null), eb('volume_change_lease_until', '<', leaseUntil)]))
    .execute();
}

/**
 * A change ends: one fewer in flight, and the counter moves on once more, so
 * that a backup begun after a lapsed lease (the change still going on) is
 * failed too if it ends after this.
 */
export async function endVolumeChange(db: Queryable, serverId: number): Promise<void> {
  await db
    .updateTable('servers')
    .set((eb) => ({
      volume_changes: eb('volume_changes', '+', 1),
      volume_changes_in_flight: eb
        .case()
        .when('volume_changes_in_flight', '>', 1)
        .then(eb('volume_changes_in_flight', '-', 1))
        .else(0)
        .end(),
    }))
    .where('id', '=', serverId)
    .execute();
}

/** The server's change counter now (undefined when the server is gone). */
export async function findVolumeChanges(db: Queryable, serverId: number): Promise<number | undefined> {
  const row = await db.selectFrom('servers').select('volume_changes').where('id', '=', serverId).executeTakeFirst();
  return row?.volume_changes;
}
