import type { Queryable } from '../../db/database.js';
import type { UserRow } from '../../db/schema.js';
import { ValidationError } from '../../http/errors.js';
import { PASSWORD_MAX_BYTES, verifyPassword } from '../users/passwords.js';
import { findUserForSignIn } from '../users/users.repository.js';
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
 * Checks a username or email and password and opens a session (SPEC 12). A
 * wrong name and a wrong password answer the same 422 after the same work;
 * the address's and the account-and-address throttles answer 429 before any
 * password is checked (sessions.throttle.ts).
 */
export async function signIn(db: Queryable, input: SignInInput): Promise<OpenedSession & { user: UserRow }> {
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
  if (!found || !matches) throw ValidationError.of('user', 'credentials', SIGN_IN_FAILED);

  await forgetAttempts(db, pair, accountAttempt);
  if (input.previousToken !== undefined) await endSessionByToken(db, input.previousToken);
  const session = await openSession(db, { user: found.user, ip: input.ip, userAgent: input.userAgent, now });
  return { ...session, user: found.user };
}
