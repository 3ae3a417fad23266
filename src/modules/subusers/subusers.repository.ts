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

/** A subuser row with the user it names (what the `server_subuser` object shows). */
export interface SubuserWithUser {
  id: number;
  server_id: number;
  user_id: number;
  permissions: string;
  uuid: string;
  username: string;
  email: string;
  use_totp: number;
}

function subusersWithUsers(db: Queryable) {
  return (
    db
      .selectFrom('subusers')
      .innerJoin('users', 'users.id', 'subusers.user_id')
      .select([
        'subusers.id',
        'subusers.server_id',
        'subusers.user_id',
        'subusers.permissions',
        'users.uuid',
        'users.username',
        'users.email',
        'users.use_totp',
      ])
      // The subuser's user's creation time, as Pterodactyl's UserTransformer shows it.
      .select('users.created_at')
  );
}

export type SubuserListRow = SubuserWithUser & { created_at: number };

/** The subusers of each of `serverIds`, in the order they were added. */
export async function findSubusersOfServers(db: Queryable, serverIds: readonly number[]): Promise<SubuserListRow[]> {
  if (serverIds.length === 0) return [];
  return subusersWithUsers(db).where('subusers.server_id', 'in', serverIds).orderBy('subusers.id').execute();
}

/** The subuser of `serverId` whose user has `userUuid`; undefined when that user is not one. */
export async function findSubuserByUserUuid(
  db: Queryable,
  serverId: number,
  userUuid: string,
): Promise<SubuserListRow | undefined> {
  return subusersWithUsers(db)
    .where('subusers.server_id', '=', serverId)
    .where('users.uuid', '=', userUuid.toLowerCase())
    .executeTakeFirst();
}

/** The subuser row with this id, as SubuserListRow. */
export async function findSubuserById(db: Queryable, id: number): Promise<SubuserListRow | undefined> {
  return subusersWithUsers(db).where('subusers.id', '=', id).executeTakeFirst();
}

/** The user with this email, compared case-insensitively (emails are unique whatever their case). */
export async function findUserIdByEmail(db: Queryable, email: string): Promise<number | undefined> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .executeTakeFirst();
  return row?.id;
}

export async function isSubuserOf(db: Queryable, serverId: number, userId: number): Promise<boolean> {
  const row = await db
    .selectFrom('subusers')
    .select('id')
    .where('server_id', '=', serverId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row !== undefined;
}

export async function isUsernameTaken(db: Queryable, username: string): Promise<boolean> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where((eb) => eb(eb.fn('lower', ['username']), '=', username.toLowerCase()))
    .executeTakeFirst();
  return row !== undefined;
}

export async function insertSubuser(
  db: Queryable,
  input: { serverId: number; userId: number; permissions: readonly string[]; now: number },
): Promise<number> {
  const row = await db
    .insertInto('subusers')
    .values({
      server_id: input.serverId,
      user_id: input.userId,
      permissions: JSON.stringify(input.permissions),
      created_at: input.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function setSubuserPermissions(db: Queryable, id: number, permissions: readonly string[]): Promise<void> {
  await db
    .updateTable('subusers')
    .set({ permissions: JSON.stringify(permissions) })
    .where('id', '=', id)
    .execute();
}

export async function deleteSubuser(db: Queryable, id: number): Promise<void> {
  await db.deleteFrom('subusers').where('id', '=', id).execute();
}

/** Locks the server's row until the transaction ends (a no-op update; SQLite's writers are serial anyway). */
export async function lockServerForSubusers(db: Queryable, serverId: number): Promise<void> {
  await db
    .updateTable('servers')
    .set((eb) => ({ updated_at: eb.ref('updated_at') }))
    .where('id', '=', serverId)
    .execute();
}
