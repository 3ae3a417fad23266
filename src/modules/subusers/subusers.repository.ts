import type { Queryable } from '../../db/database.js';
import type { SubuserRow } from '../../db/schema.js';

/**
 * Makes `userId` a subuser of `serverId` with exactly `permissions`: a new row,
 * or the existing one's permissions replaced (in one statement, so two
 * concurrent calls cannot both insert).
 */
export async function upsertSubuser(
  db: Queryable,
  input: { serverId: number; userId: number; permissions: readonly string[]; now: number },
): Promise<SubuserRow> {
  const permissions = JSON.stringify(input.permissions);
  return db
    .insertInto('subusers')
    .values({ server_id: input.serverId, user_id: input.userId, permissions, created_at: input.now })
    .onConflict((oc) => oc.columns(['server_id', 'user_id']).doUpdateSet({ permissions }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** `userId`'s subuser permissions on each of `serverIds` it is a subuser of (servers it is not are absent). */
export async function findSubuserPermissionsOn(
  db: Queryable,
  userId: number,
  serverIds: readonly number[],
): Promise<Map<number, string[]>> {
  const byServer = new Map<number, string[]>();
  if (serverIds.length === 0) return byServer;
  const rows = await db
    .selectFrom('subusers')
    .select(['server_id', 'permissions'])
    .where('user_id', '=', userId)
    .where('server_id', 'in', serverIds)
    .execute();
  for (const row of rows) byServer.set(row.server_id, JSON.parse(row.permissions) as string[]);
  return byServer;
}
