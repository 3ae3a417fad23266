import { sql, type Insertable } from 'kysely';
import { precompiled, type DialectName, type Queryable } from '../../db/database.js';
import type { ApiKeyRow, ApiKeyTable, UserRow } from '../../db/schema.js';
import { JOINED_USER_COLUMNS, joinedUser, type JoinedUserColumns } from '../users/users.repository.js';

export async function insertApiKey(db: Queryable, values: Insertable<ApiKeyTable>): Promise<ApiKeyRow> {
  return db.insertInto('api_keys').values(values).returningAll().executeTakeFirstOrThrow();
}

/** Revokes a key that is not revoked yet; false when there was none. */
export async function revokeApiKey(db: Queryable, identifier: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('identifier', '=', identifier)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function findApiKeyByIdentifier(db: Queryable, identifier: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('identifier', '=', identifier).executeTakeFirst();
}

export async function markApiKeyUsed(db: Queryable, keyId: number, now: number): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', keyId).execute();
}

/** The owner's columns are null when the owner is gone (a left join). */
interface KeyWithUserRow extends ApiKeyRow, Omit<JoinedUserColumns, 'u_id'> {
  u_id: number | null;
}
const keyWithUser = precompiled<KeyWithUserRow>(
  (identifier) => sql`
    select k.id, k.user_id, k.identifier, k.token_hash, k.description, k.allowed_ips, k.last_used_at, k.revoked_at, k.created_at,
      ${JOINED_USER_COLUMNS}
    from api_keys k left join users u on u.id = k.user_id
    where k.identifier = ${identifier}`,
  1,
);

/** A key by identifier and its owner (undefined when the owner is gone), in one statement. */
export async function findKeyWithUser(
  db: Queryable,
  identifier: string,
): Promise<{ key: ApiKeyRow; user: UserRow | undefined } | undefined> {
  const r = (await keyWithUser(db, [identifier])).rows[0];
  if (!r) return undefined;
  const key: ApiKeyRow = {
    id: r.id,
    user_id: r.user_id,
    identifier: r.identifier,
    token_hash: r.token_hash,
    description: r.description,
    allowed_ips: r.allowed_ips,
    last_used_at: r.last_used_at,
    revoked_at: r.revoked_at,
    created_at: r.created_at,
  };
  const user: UserRow | undefined = r.u_id === null ? undefined : joinedUser(r.u_id, r);
  return { key, user };
}

/** A user's keys that still work, oldest first (revoked ones are gone from their owner's view). */
export async function listLiveApiKeysOfUser(db: Queryable, userId: number): Promise<ApiKeyRow[]> {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .orderBy('id')
    .execute();
}

export async function countLiveApiKeysOfUser(db: Queryable, userId: number): Promise<number> {
  const row = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Revokes one of the user's live keys; false when the user has no such key. */
export async function revokeApiKeyOfUser(db: Queryable, userId: number, identifier: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('identifier', '=', identifier)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Serialises key creations of one user until the transaction ends, so that a
 * count of their keys stays true until the new one is in. PostgreSQL: a row
 * lock on the user that does not block inserts referencing it. SQLite: the
 * transaction's first write (the insert that follows) takes the database's
 * write lock, which already serialises.
 */
export async function lockKeysOfUser(trx: Queryable, dialect: DialectName, userId: number): Promise<void> {
  if (dialect === 'postgres') await sql`select id from users where id = ${userId} for no key update`.execute(trx);
}
