import type { Queryable } from '../../db/database.js';
import type { Updateable } from 'kysely';
import type { ServerRow, ServerTable } from '../../db/schema.js';

/**
 * The server's row as it is now, locked until the transaction ends: a no-op
 * update takes the row lock on PostgreSQL and the writer lock on SQLite, so two
 * renames in a race log their `old` values in the order they applied.
 */
export async function lockServerForSettings(db: Queryable, serverId: number): Promise<ServerRow | undefined> {
  return db
    .updateTable('servers')
    .set((eb) => ({ name: eb.ref('name') }))
    .where('id', '=', serverId)
    .returningAll()
    .executeTakeFirst();
}

export async function setServerNameAndDescription(
  db: Queryable,
  serverId: number,
  values: { name: string; description: string },
  now: number,
): Promise<void> {
  await db
    .updateTable('servers')
    .set({ name: values.name, description: values.description, updated_at: now })
    .where('id', '=', serverId)
    .execute();
}

export async function setServerImage(db: Queryable, serverId: number, image: string | null, now: number): Promise<void> {
  await db.updateTable('servers').set({ image, updated_at: now }).where('id', '=', serverId).execute();
}

/** What an administrator may change on a server (server:update): its name, command, image and limits. */
export type ServerSettingsUpdate = Partial<
  Pick<
    Updateable<ServerTable>,
    | 'name'
    | 'startup'
    | 'stop_command'
    | 'image'
    | 'memory_mib'
    | 'cpu_percent'
    | 'disk_mib'
    | 'pids'
    | 'inodes'
    | 'allocation_limit'
    | 'backup_limit'
    | 'database_limit'
  >
>;

/** Writes `changes` in one statement; the server's uuid, identifier and name after it (undefined: no such server). */
export async function updateServerSettings(db: Queryable, serverId: number, changes: ServerSettingsUpdate, now: number) {
  return db
    .updateTable('servers')
    .set({ ...changes, updated_at: now })
    .where('id', '=', serverId)
    .returning(['uuid', 'uuid_short', 'name'])
    .executeTakeFirst();
}

/** The uuids of a server's backups (whose archives go when it is deleted). */
export async function findBackupUuidsOfServer(db: Queryable, serverId: number): Promise<string[]> {
  const rows = await db.selectFrom('backups').select('uuid').where('server_id', '=', serverId).execute();
  return rows.map((row) => row.uuid);
}

/** Frees a server's allocations (notes cleared, as a removed allocation's are). */
export async function releaseAllocationsOfServer(db: Queryable, serverId: number, now: number): Promise<void> {
  await db
    .updateTable('allocations')
    .set({ server_id: null, notes: null, updated_at: now })
    .where('server_id', '=', serverId)
    .execute();
}

/** Deletes the row; the rows that hang off it go by ON DELETE CASCADE (migrations 001, 002, 005, 010). */
export async function deleteServerRow(db: Queryable, serverId: number): Promise<void> {
  await db.deleteFrom('servers').where('id', '=', serverId).execute();
}
