import { createHash, randomBytes } from 'node:crypto';
import type { Queryable } from '../../db/database.js';
import type { UserRow } from '../../db/schema.js';
import type { SessionAuthentication } from '../../http/client-resolver.js';
import { csrfTokenMatches } from '../../http/cookies.js';
import {
  deleteExpiredSessions,
  deleteSession,
  deleteSessionsOfUser,
  findSessionWithUser,
  insertSession,
  markSessionSeen,
} from './sessions.repository.js';

/**
 * Sessions of signed-in browsers (docs/reference/web-console.md). The cookie carries 32 random bytes
 * (base64url); the row is found by their SHA-256, so the table never holds
 * anything that signs anyone in. A session ends after 7 days without a
 * request, 30 days after sign-in whatever happens, at sign-out, and when its
 * user's password changes. Every check reads the row, so an ended session
 * stops working at once in every instance.
 */
export const SESSION_IDLE_MS = 7 * 86_400_000;
export const SESSION_LIFETIME_MS = 30 * 86_400_000;
/** `last_seen_at` is written at most this often, so that reads stay reads (as keys' `last_used_at`). */
const SEEN_RESOLUTION_MS = 60_000;
const USER_AGENT_MAX = 255;
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export interface OpenedSession {
  /** The cookie's value: shown to the browser once, stored nowhere. */
  token: string;
  csrfToken: string;
  expiresAt: number;
}

const sessionId = (token: string) => createHash('sha256').update(token).digest('hex');

export async function openSession(
  db: Queryable,
  input: { user: UserRow; ip: string; userAgent: string | undefined; now: number },
): Promise<OpenedSession> {
  const token = randomBytes(32).toString('base64url');
  const csrfToken = randomBytes(32).toString('base64url');
  const expiresAt = input.now + SESSION_LIFETIME_MS;
  await insertSession(db, {
    id: sessionId(token),
    user_id: input.user.id,
    csrf_token: csrfToken,
    ip: input.ip,
    user_agent: input.userAgent === undefined ? null : [...input.userAgent].slice(0, USER_AGENT_MAX).join(''),
    created_at: input.now,
    last_seen_at: input.now,
    expires_at: expiresAt,
  });
  return { token, csrfToken, expiresAt };
}

/**
 * The live session a cookie's token names, as the caller of a request (no
 * API key), and its CSRF token; null when there is none. An expired one is
 * deleted on the way.
 */
export async function authenticateSession(
  db: Queryable,
  token: string,
  ip: string,
  now: number,
): Promise<SessionAuthentication | null> {
  if (!TOKEN.test(token)) return null;
  const found = await findSessionWithUser(db, sessionId(token));
  if (!found) return null;
  const { session, user } = found;
  if (now >= session.expires_at || now - session.last_seen_at >= SESSION_IDLE_MS) {
    await deleteSession(db, session.id);
    return null;
  }
  if (now - session.last_seen_at >= SEEN_RESOLUTION_MS) await markSessionSeen(db, session.id, now);
  return {
    auth: { user, key: null, sessionId: session.id, actor: { userId: user.id, apiKeyId: null, ip } },
    csrfToken: session.csrf_token,
  };
}

/** Sign-out: the session's row goes, so the cookie stops working everywhere at once. */
export async function endSession(db: Queryable, id: string): Promise<void> {
  await deleteSession(db, id);
}

/** Ends the session a cookie's token names, if any (a browser signing in again replaces its session). */
export async function endSessionByToken(db: Queryable, token: string): Promise<void> {
  if (TOKEN.test(token)) await deleteSession(db, sessionId(token));
}

/** Ends every session of the user but `keep`; how many ended. */
export function endSessionsOfUser(db: Queryable, userId: number, keep: string | null = null): Promise<number> {
  return deleteSessionsOfUser(db, userId, keep);
}

/** Deletes sessions nobody can use any more (run at each sign-in: no timer needed). */
export function pruneExpiredSessions(db: Queryable, now: number): Promise<void> {
  return deleteExpiredSessions(db, now, now - SESSION_IDLE_MS);
}

/** The session a cookie's token names (`GET /auth/session`), marked seen; null when none is live. */
export function currentSession(db: Queryable, token: string, ip: string, now: number): Promise<SessionAuthentication | null> {
  return authenticateSession(db, token, ip, now);
}

/**
 * `POST /auth/logout`: ends the live session `token` names when the request
 * carries its CSRF token. 'none': no live session (nothing to end);
 * 'csrf-mismatch': refused, the session stays.
 */
export async function signOut(
  db: Queryable,
  token: string,
  csrfHeader: string | string[] | undefined,
  ip: string,
  now: number,
): Promise<'ended' | 'none' | 'csrf-mismatch'> {
  const session = await authenticateSession(db, token, ip, now);
  if (!session) return 'none';
  if (!csrfTokenMatches(csrfHeader, session.csrfToken)) return 'csrf-mismatch';
  await endSessionByToken(db, token);
  return 'ended';
}
