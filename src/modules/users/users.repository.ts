import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../db/database.js';
import type { UserRow } from '../../db/schema.js';

export async function createUser(
  db: Queryable,
  input: { username: string; email: string; rootAdmin: boolean; now: number },
): Promise<UserRow> {
  return db
    .insertInto('users')
    .values({
      uuid: randomUUID(),
      username: input.username,
      email: input.email,
      root_admin: input.rootAdmin ? 1 : 0,
      use_totp: 0,
      created_at: input.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A user by username, email or UUID, as the admin CLI accepts them. */
export async function findUserByReference(db: Queryable, reference: string): Promise<UserRow | undefined> {
  return db
    .selectFrom('users')
    .selectAll()
    .where((eb) => eb.or([eb('username', '=', reference), eb('email', '=', reference), eb('uuid', '=', reference)]))
    .executeTakeFirst();
}

/** Which of `username` and `email` another user already has, compared case-insensitively; null when neither. */
export async function findTakenUserField(db: Queryable, username: string, email: string): Promise<'username' | 'email' | null> {
  const rows = await db
    .selectFrom('users')
    .select(['username', 'email'])
    .where((eb) =>
      eb.or([eb(eb.fn('lower', ['username']), '=', username.toLowerCase()), eb(eb.fn('lower', ['email']), '=', email.toLowerCase())]),
    )
    .limit(2)
    .execute();
  if (rows.some((r) => r.username.toLowerCase() === username.toLowerCase())) return 'username';
  return rows.length > 0 ? 'email' : null;
}
