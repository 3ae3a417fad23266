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
