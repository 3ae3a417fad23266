import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { DialectName, Queryable } from '../../db/database.js';
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

export async function hasUsers(db: Queryable): Promise<boolean> {
  return (await db.selectFrom('users').select('id').limit(1).executeTakeFirst()) !== undefined;
}

/** Serialises first starts: taken before the "no users yet" check, held until commit. */
export async function lockForBootstrap(trx: Queryable, dialect: DialectName): Promise<void> {
  switch (dialect) {
    case 'postgres':
      await sql`select pg_advisory_xact_lock(hashtext('quetzal.bootstrap'))`.execute(trx);
      return;
    case 'sqlite':
      // A write as the transaction's first statement takes the write lock (waiting on
      // busy_timeout), so the check below reads what any other first start committed.
      await trx
        .updateTable('users')
        .set({ root_admin: 1 })
        .where(sql<boolean>`0 = 1`)
        .execute();
      return;
  }
}
