import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { DialectName, Queryable } from '../../db/database.js';
import type { UserRow } from '../../db/schema.js';

/** Every column but the password hash, which leaves the database only for a sign-in check. */
const USER_COLUMNS = ['id', 'uuid', 'username', 'email', 'root_admin', 'use_totp', 'created_at'] as const;

export async function createUser(
  db: Queryable,
  input: { username: string; email: string; rootAdmin: boolean; now: number; passwordHash?: string | null },
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
      password: input.passwordHash ?? null,
    })
    .returning(USER_COLUMNS)
    .executeTakeFirstOrThrow();
}

/** A user by username, email or UUID, as the admin CLI accepts them. */
export async function findUserByReference(db: Queryable, reference: string): Promise<UserRow | undefined> {
  return db
    .selectFrom('users')
    .select(USER_COLUMNS)
    .where((eb) => eb.or([eb('username', '=', reference), eb('email', '=', reference), eb('uuid', '=', reference)]))
    .executeTakeFirst();
}

/** Which of `username` and `email` another user already has, compared case-insensitively; null when neither. */
export async function findTakenUserField(db: Queryable, username: string, email: string): Promise<'username' | 'email' | null> {
  const rows = await db
    .selectFrom('users')
    .select(['username', 'email'])
    .where((eb) =>
      eb.or([
        eb(eb.fn('lower', ['username']), '=', username.toLowerCase()),
        eb(eb.fn('lower', ['email']), '=', email.toLowerCase()),
      ]),
    )
    .limit(2)
    .execute();
  if (rows.some((r) => r.username.toLowerCase() === username.toLowerCase())) return 'username';
  return rows.length > 0 ? 'email' : null;
}

/**
 * The user a sign-in names, with their password hash: by email when the input
 * has an `@` (usernames cannot), by username otherwise, in any letter case
 * (both are unique whatever their case).
 */
export async function findUserForSignIn(
  db: Queryable,
  input: string,
): Promise<{ user: UserRow; password: string | null } | undefined> {
  const column = input.includes('@') ? 'email' : 'username';
  const row = await db
    .selectFrom('users')
    .select([...USER_COLUMNS, 'password'])
    .where((eb) => eb(eb.fn('lower', [column]), '=', input.toLowerCase()))
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  if (!row) return undefined;
  const { password, ...user } = row;
  return { user, password };
}

/** The user's password hash (null: none set), for a check of the current password. */
export async function findPasswordHash(db: Queryable, userId: number): Promise<string | null> {
  const row = await db.selectFrom('users').select('password').where('id', '=', userId).executeTakeFirst();
  return row?.password ?? null;
}

export async function setPasswordHash(db: Queryable, userId: number, hash: string): Promise<void> {
  await db.updateTable('users').set({ password: hash }).where('id', '=', userId).execute();
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

/**
 * A user's columns as `u_*` in a join (a key's or a session's owner, looked up
 * on every request in one statement), and the row they make.
 */
export const JOINED_USER_COLUMNS = sql.raw(
  'u.id as u_id, u.uuid as u_uuid, u.username as u_username, u.email as u_email, u.root_admin as u_root_admin, ' +
    'u.use_totp as u_use_totp, u.created_at as u_created_at',
);

export interface JoinedUserColumns {
  u_id: number;
  u_uuid: string;
  u_username: string;
  u_email: string;
  u_root_admin: UserRow['root_admin'];
  u_use_totp: UserRow['use_totp'];
  u_created_at: number;
}

/** `id` apart: a left join's may be null, checked by the caller before. */
export function joinedUser(id: number, r: Omit<JoinedUserColumns, 'u_id'>): UserRow {
  return {
    id,
    uuid: r.u_uuid,
    username: r.u_username,
    email: r.u_email,
    root_admin: r.u_root_admin,
    use_totp: r.u_use_totp,
    created_at: r.u_created_at,
  };
}
