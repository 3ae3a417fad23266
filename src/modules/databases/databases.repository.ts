import type { Queryable } from '../../db/database.js';
import type { Insertable, Selectable } from 'kysely';
import type { DatabaseCreationTable, DatabaseHostTable, ServerDatabaseTable } from '../../db/schema.js';

export type DatabaseHostRow = Selectable<DatabaseHostTable>;
export type ServerDatabaseRow = Selectable<ServerDatabaseTable>;
export type DatabaseCreationRow = Selectable<DatabaseCreationTable>;

export async function insertDatabaseHost(db: Queryable, row: Insertable<DatabaseHostTable>): Promise<DatabaseHostRow> {
  return db.insertInto('database_hosts').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findDatabaseHosts(db: Queryable): Promise<DatabaseHostRow[]> {
  return db.selectFrom('database_hosts').selectAll().orderBy('id').execute();
}

export async function findDatabaseHostByName(db: Queryable, name: string): Promise<DatabaseHostRow | undefined> {
  return db.selectFrom('database_hosts').selectAll().where('name', '=', name).executeTakeFirst();
}

export async function findDatabaseHost(db: Queryable, id: number): Promise<DatabaseHostRow | undefined> {
  return db.selectFrom('database_hosts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function deleteDatabaseHost(db: Queryable, id: number): Promise<void> {
  await db.deleteFrom('database_hosts').where('id', '=', id).execute();
}

/** How many databases each host holds, those being created included. */
export async function countDatabasesPerHost(db: Queryable): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (const table of ['server_databases', 'database_creations'] as const) {
    const rows = await db
      .selectFrom(table)
      .select(['database_host_id', (eb) => eb.fn.countAll<string | number>().as('count')])
      .groupBy('database_host_id')
      .execute();
    for (const row of rows) counts.set(row.database_host_id, (counts.get(row.database_host_id) ?? 0) + Number(row.count));
  }
  return counts;
}

export async function findDatabasesOfServer(db: Queryable, serverId: number): Promise<ServerDatabaseRow[]> {
  return db.selectFrom('server_databases').selectAll().where('server_id', '=', serverId).orderBy('id').execute();
}

/** A server's databases, those being created included (both count against its limit). */
export async function countDatabasesOfServer(db: Queryable, serverId: number): Promise<number> {
  let total = 0;
  for (const table of ['server_databases', 'database_creations'] as const) {
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<string | number>().as('count'))
      .where('server_id', '=', serverId)
      .executeTakeFirstOrThrow();
    total += Number(row.count);
  }
  return total;
}

export async function findDatabaseOfServer(db: Queryable, id: number, serverId: number): Promise<ServerDatabaseRow | undefined> {
  return db.selectFrom('server_databases').selectAll().where('id', '=', id).where('server_id', '=', serverId).executeTakeFirst();
}

/** Whether the server has a database of this name, or one being created. */
export async function databaseNameTaken(db: Queryable, serverId: number, name: string): Promise<boolean> {
  for (const table of ['server_databases', 'database_creations'] as const) {
    const row = await db
      .selectFrom(table)
      .select('id')
      .where('server_id', '=', serverId)
      .where('database', '=', name)
      .executeTakeFirst();
    if (row) return true;
  }
  return false;
}

export async function insertServerDatabase(db: Queryable, row: Insertable<ServerDatabaseTable>): Promise<ServerDatabaseRow> {
  return db.insertInto('server_databases').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function setServerDatabasePassword(db: Queryable, id: number, password: string, now: number): Promise<void> {
  await db.updateTable('server_databases').set({ password, updated_at: now }).where('id', '=', id).execute();
}

export async function deleteServerDatabase(db: Queryable, id: number): Promise<void> {
  await db.deleteFrom('server_databases').where('id', '=', id).execute();
}

/** Takes the server's row lock (PostgreSQL) so that two creations cannot both pass the limit. */
export async function lockServerForDatabases(
  db: Queryable,
  serverId: number,
): Promise<{ id: number; database_limit: number } | undefined> {
  return db
    .updateTable('servers')
    .set((eb) => ({ database_limit: eb.ref('database_limit') }))
    .where('id', '=', serverId)
    .returning(['id', 'database_limit'])
    .executeTakeFirst();
}

export async function insertDatabaseCreation(
  db: Queryable,
  row: Insertable<DatabaseCreationTable>,
): Promise<DatabaseCreationRow> {
  return db.insertInto('database_creations').values(row).returningAll().executeTakeFirstOrThrow();
}

/** Ends a creation `owner` still holds; false when recovery took it over (its database is being dropped). */
export async function finishDatabaseCreation(db: Queryable, id: number, owner: string): Promise<boolean> {
  const result = await db.deleteFrom('database_creations').where('id', '=', id).where('owner', '=', owner).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

export async function deleteDatabaseCreation(db: Queryable, id: number): Promise<void> {
  await db.deleteFrom('database_creations').where('id', '=', id).execute();
}

export async function findDatabaseCreationOwners(db: Queryable): Promise<string[]> {
  const rows = await db.selectFrom('database_creations').select('owner').distinct().execute();
  return rows.map((row) => row.owner);
}

/** Creations whose lease ran out or whose owner is known dead. */
export async function findAbandonedDatabaseCreations(
  db: Queryable,
  options: { now: number; deadOwners: string[] },
): Promise<DatabaseCreationRow[]> {
  return db
    .selectFrom('database_creations')
    .selectAll()
    .where((eb) =>
      options.deadOwners.length > 0
        ? eb.or([eb('lease_expires_at', '<', options.now), eb('owner', 'in', options.deadOwners)])
        : eb('lease_expires_at', '<', options.now),
    )
    .orderBy('id')
    .execute();
}

/** Claims an abandoned creation for the recovery pass; false when its owner finished it (or another pass took it) first. */
export async function takeOverDatabaseCreation(
  db: Queryable,
  row: DatabaseCreationRow,
  owner: string,
  leaseExpiresAt: number,
): Promise<boolean> {
  const result = await db
    .updateTable('database_creations')
    .set({ owner, lease_expires_at: leaseExpiresAt })
    .where('id', '=', row.id)
    .where('owner', '=', row.owner)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
