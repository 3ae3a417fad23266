import { createHash, randomInt } from 'node:crypto';
import type { Database, Queryable } from '../../db/database.js';
import type { UserRow } from '../../db/schema.js';
import type { Authenticated } from '../../http/client-resolver.js';
import { badRequest, HttpError, ValidationError, type FieldFailure } from '../../http/errors.js';
import { openSecret, sealSecret, secretsKey } from '../../secrets.js';
import { verifyPassword } from '../users/passwords.js';
import { findPasswordHash } from '../users/users.repository.js';
import { recordActorEvent } from './account-activity.js';
import {
  findTwoFactorState,
  replaceRecoveryTokens,
  setPendingSecret,
  setTwoFactorEnabled,
  takeRecoveryToken,
} from './account-security.repository.js';
import { acceptTotpCode, newTotpSecret, totpUri } from './totp.js';

/**
 * Two-factor TOTP (docs/reference/accounts.md; Pterodactyl's TwoFactorController,
 * TwoFactorSetupService and ToggleTwoFactorService). The secret is stored
 * sealed with the app key, pending until a code proves the app has it; then
 * ten recovery tokens are shown once and stored as SHA-256.
 */
export interface TwoFactorDeps {
  db: Database;
  appKey: Uint8Array;
  clock: { now(): number };
}

export const RECOVERY_TOKEN_COUNT = 10;
const RECOVERY_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const TOKEN_INVALID = 'The two-factor authentication token provided was not valid.';
const ALREADY_ENABLED = 'Two-factor authentication is already enabled on this account.';
const PASSWORD_INVALID = 'The password provided was not valid.';

export const hashRecoveryToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** 10 characters, each uniform over the 62 letters and digits (Pterodactyl's `Str::random(10)`). */
function recoveryToken(): string {
  return Array.from({ length: 10 }, () => RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)]).join('');
}

const tokenInvalid = () => new HttpError(400, 'TwoFactorAuthenticationTokenInvalid', TOKEN_INVALID);

async function checkPassword(db: Queryable, userId: number, password: unknown): Promise<void> {
  const stored = await findPasswordHash(db, userId);
  if (typeof password !== 'string' || !(await verifyPassword(password, stored))) throw badRequest(PASSWORD_INVALID);
}

/** `GET /account/two-factor`: a new pending secret and its otpauth URI (400 once two-factor is on). */
export async function setUpTwoFactor(deps: TwoFactorDeps, user: UserRow): Promise<{ image_url_data: string; secret: string }> {
  const state = await findTwoFactorState(deps.db, user.id);
  if (!state || state.use_totp === 1) throw badRequest(ALREADY_ENABLED);
  const secret = newTotpSecret();
  await setPendingSecret(deps.db, user.id, sealSecret(secretsKey(deps.appKey), secret));
  return { image_url_data: totpUri(user.email, secret), secret };
}

/** The user's secret in clear, or null when none is stored. */
export async function totpSecretOf(
  deps: Pick<TwoFactorDeps, 'db' | 'appKey'>,
  db: Queryable,
  userId: number,
): Promise<string | null> {
  const state = await findTwoFactorState(db, userId);
  return state?.totp_secret ? openSecret(secretsKey(deps.appKey), state.totp_secret) : null;
}

/** `POST /account/two-factor {code, password}`: turns two-factor on; the recovery tokens, shown once. */
export async function enableTwoFactor(
  deps: TwoFactorDeps,
  auth: Authenticated,
  body: Record<string, unknown>,
): Promise<string[]> {
  const failures: FieldFailure[] = [];
  const { code, password } = body;
  if (code === undefined || code === null || code === '') {
    failures.push({ field: 'code', rule: 'required', detail: 'The code field is required.' });
  } else if (typeof code !== 'string') {
    failures.push({ field: 'code', rule: 'string', detail: 'The code field must be a string.' });
  } else if ([...code].length !== 6) {
    failures.push({ field: 'code', rule: 'size', detail: 'The code field must be 6 characters.' });
  }
  if (password === undefined || password === null || password === '') {
    failures.push({ field: 'password', rule: 'required', detail: 'The password field is required.' });
  } else if (typeof password !== 'string') {
    failures.push({ field: 'password', rule: 'string', detail: 'The password field must be a string.' });
  }
  if (failures.length > 0) throw new ValidationError(failures);
  const userId = auth.user.id;
  await checkPassword(deps.db, userId, password);
  const now = deps.clock.now();
  const tokens = Array.from({ length: RECOVERY_TOKEN_COUNT }, recoveryToken);
  await deps.db.transaction().execute(async (trx) => {
    const state = await findTwoFactorState(trx, userId);
    if (state?.use_totp === 1) throw badRequest(ALREADY_ENABLED);
    if (!state?.totp_secret) throw tokenInvalid();
    const secret = openSecret(secretsKey(deps.appKey), state.totp_secret);
    if (!(await acceptTotpCode(trx, userId, secret, code as string, now))) throw tokenInvalid();
    await setTwoFactorEnabled(trx, userId, true, now);
    await replaceRecoveryTokens(trx, userId, tokens.map(hashRecoveryToken), now);
    await recordActorEvent(trx, auth.actor, userId, 'user:two-factor.create', now);
  });
  return tokens;
}

/** `POST /account/two-factor/disable {password}` (and `DELETE /account/two-factor`): turns two-factor off. */
export async function disableTwoFactor(deps: TwoFactorDeps, auth: Authenticated, password: unknown): Promise<void> {
  const userId = auth.user.id;
  await checkPassword(deps.db, userId, password);
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    await setTwoFactorEnabled(trx, userId, false, now);
    await replaceRecoveryTokens(trx, userId, [], now);
    await recordActorEvent(trx, auth.actor, userId, 'user:two-factor.delete', now);
  });
}

/** A recovery token of the user, consumed: true when it was one (each is good once). */
export function useRecoveryToken(db: Queryable, userId: number, token: string): Promise<boolean> {
  return takeRecoveryToken(db, userId, hashRecoveryToken(token));
}
