import { createHash, randomBytes } from 'node:crypto';
import type { Database, Queryable } from '../../db/database.js';
import type { UserRow } from '../../db/schema.js';
import { displayException } from '../../http/errors.js';
import { recordAccountEvent } from '../account/account-activity.js';
import {
  deleteCheckpoint,
  deleteExpiredCheckpoints,
  findCheckpoint,
  findUserById,
  insertCheckpoint,
} from '../account/account-security.repository.js';
import { acceptTotpCode } from '../account/totp.js';
import { totpSecretOf, useRecoveryToken } from '../account/two-factor.service.js';
import {
  ADDRESS_THROTTLE,
  PAIR_THROTTLE,
  PAIR_UNDER_ATTACK,
  accountUnderAttack,
  addressBucket,
  forgetAttempts,
  pairBucket,
  recordAttempt,
  takeAttempt,
} from './sessions.throttle.js';

/**
 * The second step of a sign-in with two-factor (docs/reference/accounts.md; Pterodactyl's
 * LoginCheckpointController). The password step leaves a checkpoint (the
 * SHA-256 of its confirmation token) good for 5 minutes, in the database so
 * that any instance completes it; a TOTP code (once: users.totp_last_step) or
 * a recovery token (once: deleted) completes it once. Throttled as sign-in.
 */
export const CHECKPOINT_LIFETIME_MS = 5 * 60_000;
export const TOKEN_EXPIRED = 'The authentication token provided has expired, please refresh the page and try again.';
export const CHECKPOINT_FAILED = 'The two-factor authentication token was invalid.';
export const RECOVERY_FAILED = 'The recovery token provided is not valid.';

const checkpointId = (token: string) => createHash('sha256').update(token).digest('hex');

/** Opens a checkpoint for a user whose password was right: `auth:checkpoint`; its confirmation token. */
export async function openCheckpoint(db: Queryable, userId: number, ip: string, now: number): Promise<string> {
  await deleteExpiredCheckpoints(db, now);
  const token = randomBytes(32).toString('base64url');
  await insertCheckpoint(db, {
    id: checkpointId(token),
    user_id: userId,
    ip,
    created_at: now,
    expires_at: now + CHECKPOINT_LIFETIME_MS,
  });
  await recordAccountEvent(db, { userId, event: 'auth:checkpoint', ip, now });
  return token;
}

export interface CheckpointInput {
  confirmationToken: unknown;
  authenticationCode: unknown;
  recoveryToken: unknown;
  ip: string;
  now: number;
}

/**
 * Checks a checkpoint's second factor; the user to sign in. A missing or
 * expired checkpoint and a wrong code or token are 400s with Pterodactyl's
 * sentences; each failure counts against the address and the account.
 */
export async function passCheckpoint(deps: { db: Database; appKey: Uint8Array }, input: CheckpointInput): Promise<UserRow> {
  const { db } = deps;
  const { now, ip } = input;
  await takeAttempt(db, addressBucket(ip), ADDRESS_THROTTLE, now);
  const token = typeof input.confirmationToken === 'string' ? input.confirmationToken : '';
  const checkpoint = token === '' ? undefined : await findCheckpoint(db, checkpointId(token));
  if (!checkpoint || checkpoint.expires_at <= now) throw displayException(TOKEN_EXPIRED);
  const userId = checkpoint.user_id;
  // Second-factor failures have buckets of their own: a sign-in with the right password (which forgets the
  // password's failures) must not reset the count of guessed codes.
  const account = `2fa:user:${userId}`;
  const pair = pairBucket(account, ip);
  const underAttack = await accountUnderAttack(db, account, now);
  await takeAttempt(db, pair, underAttack ? PAIR_UNDER_ATTACK : PAIR_THROTTLE, now);
  const accountAttempt = await recordAttempt(db, account, now);
  const user = await findUserById(db, userId);

  const recovery = typeof input.recoveryToken === 'string' && input.recoveryToken !== '' ? input.recoveryToken : null;
  let passed = false;
  if (user) {
    if (recovery !== null) {
      passed = await useRecoveryToken(db, userId, recovery);
    } else {
      const secret = await totpSecretOf(deps, db, userId);
      const code =
        typeof input.authenticationCode === 'string' ? input.authenticationCode : String(input.authenticationCode ?? '');
      passed = secret !== null && (await acceptTotpCode(db, userId, secret, code, now));
    }
  }
  if (!user || !passed) {
    if (user) await recordAccountEvent(db, { userId, event: 'auth:fail', ip, now });
    throw displayException(recovery !== null ? RECOVERY_FAILED : CHECKPOINT_FAILED);
  }
  // Once: the first request to delete the checkpoint completes it.
  if (!(await deleteCheckpoint(db, checkpoint.id))) throw displayException(TOKEN_EXPIRED);
  await forgetAttempts(db, pair, accountAttempt);
  await recordAccountEvent(db, { userId, event: recovery !== null ? 'auth:recovery-token' : 'auth:token', ip, now });
  return user;
}
