import { sql } from 'kysely';
import { precompiled, type Queryable } from '../../db/database.js';
import type { SessionRow, UserRow } from '../../db/schema.js';
import { JOINED_USER_COLUMNS, joinedUser, type JoinedUserColumns } from '../users/users.repository.js';

export async function insertSession(db: Queryable, row: SessionRow): Promise<void> {
  await db.insertInto('sessions').values(row).execute();
}

interface SessionWithUserRow extends JoinedUserColumns {
  id: string;
  csrf_token: string;
  last_seen_at: number;
  expires_at: number;
}
// Every request a browser makes runs this: compiled once, like the key lookup.
const sessionWithUser = precompiled<SessionWithUserRow>(
  (id) => sql`
    select s.id, s.csrf_token, s.last_seen_at, s.expires_at,
      ${JOINED_USER_COLUMNS}
    from sessions s join users u on u.id = s.user_id
    where s.id = ${id}`,
  1,
);

export interface SessionWithUser {
  session: Pick<SessionRow, 'id' | 'csrf_token' | 'last_seen_at' | 'expires_at'>;
  user: UserRow;
}

/** A session by id and its user, in one statement. */
export async function findSessionWithUser(db: Queryable, id: string): Promise<SessionWithUser | undefined> {
  const r = (await sessionWithUser(db, [id])).rows[0];
  if (!r) return undefined;
  return {
    session: { id: r.id, csrf_token: r.csrf_token, last_seen_at: r.last_seen_at, expires_at: r.expires_at },
    user: joinedUser(r.u_id, r),
  };
}

export async function markSessionSeen(db: Queryable, id: string, now: number): Promise<void> {
  await db.updateTable('sessions').set({ last_seen_at: now }).where('id', '=', id).execute();
}

export async function deleteSession(db: Queryable, id: string): Promise<void> {
  await db.deleteFrom('sessions').where('id', '=', id).execute();
}

/** Ends every session of the user but `keep` (the caller's own, when it has one). */
export async function deleteSessionsOfUser(db: Queryable, userId: number, keep: string | null): Promise<number> {
  let query = db.deleteFrom('sessions').where('user_id', '=', userId);
  if (keep !== null) query = query.where('id', '<>', keep);
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Sessions past their absolute end, or idle since `idleSince`. */
export async function deleteExpiredSessions(db: Queryable, now: number, idleSince: number): Promise<void> {
  await db
    .deleteFrom('sessions')
    .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<=', idleSince)]))
    .execute();
}

export async function countSessionsOfUser(db: Queryable, userId: number): Promise<number> {
  const row = await db
    .selectFrom('sessions')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

// Sign-in attempts (sessions.throttle.ts).

export async function insertLoginAttempt(db: Queryable, bucket: string, now: number): Promise<number> {
  const row = await db
    .insertInto('login_attempts')
    .values({ bucket, attempted_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

/** How many attempts `bucket` holds since `since`, and when the oldest of them was. */
export async function countLoginAttempts(
  db: Queryable,
  bucket: string,
  since: number,
): Promise<{ count: number; oldest: number | null }> {
  const row = await db
    .selectFrom('login_attempts')
    .select((eb) => [eb.fn.countAll<number | string>().as('n'), eb.fn.min('attempted_at').as('oldest')])
    .where('bucket', '=', bucket)
    .where('attempted_at', '>', since)
    .executeTakeFirstOrThrow();
  return { count: Number(row.n), oldest: row.oldest === null ? null : Number(row.oldest) };
}

export async function deleteLoginAttempt(db: Queryable, id: number): Promise<void> {
  await db.deleteFrom('login_attempts').where('id', '=', id).execute();
}

export async function clearLoginAttempts(db: Queryable, bucket: string): Promise<void> {
  await db.deleteFrom('login_attempts').where('bucket', '=', bucket).execute();
}

export async function deleteLoginAttemptsBefore(db: Queryable, before: number): Promise<void> {
  await db.deleteFrom('login_attempts').where('attempted_at', '<', before).execute();
}
