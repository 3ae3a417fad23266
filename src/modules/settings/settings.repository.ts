import type { Queryable } from '../../db/database.js';
import type { ServerRow } from '../../db/schema.js';

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
