import type { Queryable } from '../../db/database.js';
import type { Insertable, Selectable } from 'kysely';
import type { DatabaseHostTable, ServerDatabaseTable } from '../../db/schema.js';

export type DatabaseHostRow = Selectable<DatabaseHostTable>;
export type ServerDatabaseRow = Selectable<ServerDatabaseTable>;

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

/** How many databases each host holds. */
export async function countDatabasesPerHost(db: Queryable): Promise<Map<number, number>> {
  const rows = await db
    .selectFrom('server_databases')
    .select(['database_host_id', (eb) => eb.fn.countAll<string | number>().as('count')])
    .groupBy('database_host_id')
    .execute();
  return new Map(rows.map((row) => [row.database_host_id, Number(row.count)]));
}

export async function findDatabasesOfServer(db: Queryable, serverId: number): Promise<ServerDatabaseRow[]> {
  return db.selectFrom('server_databases').selectAll().where('server_id', '=', serverId).orderBy('id').execute();
}

export async function countDatabasesOfServer(db: Queryable, serverId: number): Promise<number> {
  const row = await db
    .selectFrom('server_databases')
    .select((eb) => eb.fn.countAll<string | number>().as('count'))
    .where('server_id', '=', serverId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export async function findDatabaseOfServer(db: Queryable, id: number, serverId: number): Promise<ServerDatabaseRow | undefined> {
  return db.selectFrom('server_databases').selectAll().where('id', '=', id).where('server_id', '=', serverId).executeTakeFirst();
}

export async function findDatabaseByName(db: Queryable, serverId: number, name: string): Promise<ServerDatabaseRow | undefined> {
  return db
    .selectFrom('server_databases')
    .selectAll()
    .where('server_id', '=', serverId)
    .where('database', '=', name)
    .executeTakeFirst();
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
