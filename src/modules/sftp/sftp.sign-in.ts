/**
 * Signing in to SFTP (SPEC 15): user `<username>.<server identifier>` (the
 * 8-character identifier or the full UUID) with the account's panel password,
 * then `file.sftp` on that server through the one access policy.
 *
 * Failed attempts are throttled with the web sign-in's throttles and buckets
 * (sessions.throttle.ts): they guess the same password, so the two doors
 * share one count (per address; per account and address; the account-wide
 * ceiling). A throttled attempt is refused before any password is checked.
 */
import type { Queryable } from '../../db/database.js';
import type { ServerRow, UserRow } from '../../db/schema.js';
import type { AccessRefusal, Access, ServerAction } from '../../http/permissions.js';
import type { Clock } from '../../clock.js';
import { decideServerAction } from '../servers/access-policy.js';
import {
  ADDRESS_THROTTLE,
  PAIR_THROTTLE,
  PAIR_UNDER_ATTACK,
  SignInThrottledError,
  accountBucket,
  accountUnderAttack,
  addressBucket,
  forgetAttempts,
  pairBucket,
  pruneAttempts,
  recordAttempt,
  takeAttempt,
} from '../sessions/sessions.throttle.js';
import { PASSWORD_MAX_BYTES, verifyPassword } from '../users/passwords.js';
import { findUserForSignIn } from '../users/users.repository.js';

/**
 * What an SFTP session needs, at sign-in and at every re-check: `file.sftp`,
 * and a server that is neither suspended, installing nor being restored
 * (Pterodactyl's validateCurrentState in its SFTP authentication).
 */
export const SFTP_ACCESS: ServerAction = { permission: 'file.sftp', mutates: true, blockedDuringRestore: true };

/** Who a session acts as, and on what. */
export interface SftpIdentity {
  user: UserRow;
  /** The hash the password matched: a session ends when it changes (the password was changed). */
  passwordHash: string;
  server: ServerRow;
  access: Access;
}

export type SftpSignIn =
  | { ok: true; identity: SftpIdentity }
  | { ok: false; reason: 'throttled'; retryAfterSeconds: number }
  | { ok: false; reason: 'credentials' }
  | { ok: false; reason: 'refused'; refusal: AccessRefusal };

/** `alice.1a2b3c4d` → alice and 1a2b3c4d (split at the last dot: a username may hold dots, an identifier never does). */
export function parseSftpUsername(login: string): { username: string; server: string } | null {
  const dot = login.lastIndexOf('.');
  if (dot <= 0 || dot === login.length - 1) return null;
  return { username: login.slice(0, dot), server: login.slice(dot + 1) };
}

export async function signInToSftp(
  deps: { db: Queryable; clock: Clock },
  input: { login: string; password: string; ip: string },
): Promise<SftpSignIn> {
  const { db } = deps;
  const now = deps.clock.now();
  try {
    await pruneAttempts(db, now);
    await takeAttempt(db, addressBucket(input.ip), ADDRESS_THROTTLE, now);
    const parsed = parseSftpUsername(input.login);
    // Usernames only: an email names an account on the web sign-in, not here.
    const found = parsed && !parsed.username.includes('@') ? await findUserForSignIn(db, parsed.username) : undefined;
    const account = accountBucket(found?.user.id ?? null, parsed?.username ?? input.login);
    const pair = pairBucket(account, input.ip);
    const underAttack = await accountUnderAttack(db, account, now);
    await takeAttempt(db, pair, underAttack ? PAIR_UNDER_ATTACK : PAIR_THROTTLE, now);
    const accountAttempt = await recordAttempt(db, account, now);

    const tooLong = Buffer.byteLength(input.password, 'utf8') > PASSWORD_MAX_BYTES;
    const matches = await verifyPassword(input.password, tooLong ? null : (found?.password ?? null));
    if (!parsed || !found || found.password === null || !matches) return { ok: false, reason: 'credentials' };
    await forgetAttempts(db, pair, accountAttempt);

    const decision = await decideServerAction(db, found.user, parsed.server, SFTP_ACCESS);
    if (!decision.ok) return { ok: false, reason: 'refused', refusal: decision.refusal };
    const { server, access } = decision.target;
    return { ok: true, identity: { user: found.user, passwordHash: found.password, server, access } };
  } catch (err) {
    if (err instanceof SignInThrottledError) return { ok: false, reason: 'throttled', retryAfterSeconds: err.retryAfterSeconds };
    throw err;
  }
}

/**
 * The periodic re-check of a live session: the user still exists with the
 * same password, still holds `file.sftp` on the server, and the server may
 * still be used (not suspended, installing or being restored). The fresh
 * server row and rights when so; null when the session must end.
 */
export async function recheckSftpAccess(
  db: Queryable,
  identity: SftpIdentity,
): Promise<{ server: ServerRow; access: Access } | null> {
  const found = await findUserForSignIn(db, identity.user.username);
  if (!found || found.user.id !== identity.user.id || found.password !== identity.passwordHash) return null;
  const decision = await decideServerAction(db, found.user, identity.server.uuid, SFTP_ACCESS);
  return decision.ok ? decision.target : null;
}
