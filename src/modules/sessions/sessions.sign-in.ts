import type { Queryable } from '../../db/database.js';
import type { UserRow } from '../../db/schema.js';
import { ValidationError } from '../../http/errors.js';
import { PASSWORD_MAX_BYTES, verifyPassword } from '../users/passwords.js';
import { findUserForSignIn } from '../users/users.repository.js';
import { recordAccountEvent } from '../account/account-activity.js';
import { openCheckpoint } from './sessions.checkpoint.js';
import { endSessionByToken, openSession, pruneExpiredSessions, type OpenedSession } from './sessions.service.js';
import {
  ADDRESS_THROTTLE,
  PAIR_THROTTLE,
  PAIR_UNDER_ATTACK,
  accountBucket,
  accountUnderAttack,
  addressBucket,
  forgetAttempts,
  pairBucket,
  pruneAttempts,
  recordAttempt,
  takeAttempt,
} from './sessions.throttle.js';

/** Pterodactyl's sentence (auth.failed), the same whether the name or the password was wrong. */
export const SIGN_IN_FAILED = 'No account matching those credentials could be found.';

export interface SignInInput {
  /** A username or an email. */
  user: string;
  password: string;
  /** The client's address as the panel resolved it (src/http/client-address.ts). */
  ip: string;
  userAgent: string | undefined;
  /** The session cookie the browser already had, if any: replaced by the new one. */
  previousToken: string | undefined;
  now: number;
}

/**
 * Checks a username or email and password and opens a session (docs/reference/web-console.md). A
 * wrong name and a wrong password answer the same 422 after the same work;
 * the address's and the account-and-address throttles answer 429 before any
 * password is checked (sessions.throttle.ts). The account's activity gets
 * `auth:fail` (an existing account only, as Pterodactyl: one more insert, a
 * difference far below the password hash's cost) or `auth:success`; a user
 * with two-factor gets a checkpoint instead of a session
 * (sessions.checkpoint.ts, `auth:checkpoint`).
 */
export async function signIn(db: Queryable, input: SignInInput): Promise<SignInOutcome> {
  const { now } = input;
  // Housekeeping where it costs nothing noticeable: no timer needed for either table.
  await pruneAttempts(db, now);
  await pruneExpiredSessions(db, now);

  await takeAttempt(db, addressBucket(input.ip), ADDRESS_THROTTLE, now);
  const found = await findUserForSignIn(db, input.user);
  const account = accountBucket(found?.user.id ?? null, input.user);
  const pair = pairBucket(account, input.ip);
  const underAttack = await accountUnderAttack(db, account, now);
  await takeAttempt(db, pair, underAttack ? PAIR_UNDER_ATTACK : PAIR_THROTTLE, now);
  const accountAttempt = await recordAttempt(db, account, now);

  const tooLong = Buffer.byteLength(input.password, 'utf8') > PASSWORD_MAX_BYTES;
  const matches = await verifyPassword(input.password, tooLong ? null : (found?.password ?? null));
  if (!found || !matches) {
    if (found) await recordAccountEvent(db, { userId: found.user.id, event: 'auth:fail', ip: input.ip, now });
    throw ValidationError.of('user', 'credentials', SIGN_IN_FAILED);
  }

  await forgetAttempts(db, pair, accountAttempt);
  if (found.user.use_totp === 1) {
    const confirmationToken = await openCheckpoint(db, found.user.id, input.ip, now);
    return { complete: false, confirmationToken };
  }
  return { complete: true, ...(await completeSignIn(db, found.user, input)) };
}

export type SignInOutcome =
  ({ complete: true } & OpenedSession & { user: UserRow }) | { complete: false; confirmationToken: string };

/** The session of a user who proved who they are (password, and the second factor if they use one): `auth:success`. */
export async function completeSignIn(
  db: Queryable,
  user: UserRow,
  input: Pick<SignInInput, 'ip' | 'userAgent' | 'previousToken' | 'now'>,
): Promise<OpenedSession & { user: UserRow }> {
  if (input.previousToken !== undefined) await endSessionByToken(db, input.previousToken);
  const session = await openSession(db, { user, ip: input.ip, userAgent: input.userAgent, now: input.now });
  await recordAccountEvent(db, { userId: user.id, event: 'auth:success', ip: input.ip, now: input.now });
  return { ...session, user };
}
