import type { Database, DialectName, Queryable } from '../../db/database.js';
import type { ApiKeyRow } from '../../db/schema.js';
import type { Actor } from '../../actor.js';
import type { Authenticated } from '../../http/client-resolver.js';
import { displayException, notFound, ValidationError, type FieldFailure } from '../../http/errors.js';
import { createApiKey, isIpOrCidr } from '../keys/keys.service.js';
import { countLiveApiKeysOfUser, listLiveApiKeysOfUser, lockKeysOfUser, revokeApiKeyOfUser } from '../keys/keys.repository.js';
import { recordActorEvent } from './account-activity.js';
import { endSessionsOfUser } from '../sessions/sessions.service.js';
import { hashPassword, PASSWORD_MAX_BYTES, PASSWORD_MIN_CHARACTERS, verifyPassword } from '../users/passwords.js';
import { findPasswordHash, setPasswordHash } from '../users/users.repository.js';

/** Pterodactyl's limit on a user's API keys. */
export const API_KEY_LIMIT = 25;
const ALLOWED_IPS_MAX = 50;

/**
 * Sets a user's password and ends their sessions but `keep` (the one the
 * change was made from, if any), in one transaction: a password change signs
 * out every other browser at once. API keys are left alone.
 */
export async function setPassword(
  db: Database,
  userId: number,
  password: string,
  keep: string | null,
  change?: { actor: Actor; now: number },
): Promise<void> {
  const hash = await hashPassword(password);
  await db.transaction().execute(async (trx) => {
    await setPasswordHash(trx, userId, hash);
    await endSessionsOfUser(trx, userId, keep);
    if (change) await recordActorEvent(trx, change.actor, userId, 'user:account.password-changed', change.now);
  });
}

/**
 * `PUT /account/password` (Pterodactyl's UpdatePasswordRequest): a wrong
 * current password is a 400 before the new one is looked at; then the new
 * one's rules (422); then the change, which keeps the caller's own session.
 */
export async function changePassword(
  db: Database,
  auth: Authenticated,
  body: { current_password?: string; password?: string; password_confirmation?: string },
  now: number,
): Promise<void> {
  const stored = await findPasswordHash(db, auth.user.id);
  if (!(await verifyPassword(body.current_password ?? '', stored))) {
    throw displayException('The password provided was invalid for this account.');
  }
  const password = body.password;
  const failures: FieldFailure[] = [];
  if (password === undefined) {
    failures.push({ field: 'password', rule: 'required', detail: 'The password field is required.' });
  } else {
    if (password !== body.password_confirmation) {
      failures.push({ field: 'password', rule: 'confirmed', detail: 'The password field confirmation does not match.' });
    }
    if ([...password].length < PASSWORD_MIN_CHARACTERS) {
      failures.push({
        field: 'password',
        rule: 'min',
        detail: `The password field must be at least ${PASSWORD_MIN_CHARACTERS} characters.`,
      });
    } else if (Buffer.byteLength(password, 'utf8') > PASSWORD_MAX_BYTES) {
      failures.push({
        field: 'password',
        rule: 'max',
        detail: `The password field must not be greater than ${PASSWORD_MAX_BYTES} bytes.`,
      });
    }
  }
  if (failures.length > 0 || password === undefined) throw new ValidationError(failures);
  await setPassword(db, auth.user.id, password, auth.sessionId, { actor: auth.actor, now });
}

export function listApiKeys(db: Queryable, userId: number): Promise<ApiKeyRow[]> {
  return listLiveApiKeysOfUser(db, userId);
}

/** `allowed_ips` as Pterodactyl's StoreApiKeyRequest checks it: an array of at most 50 IPs or CIDR ranges. */
function allowedIpsOf(value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw ValidationError.of('allowed_ips', 'array', 'The allowed ips field must be an array.');
  if (value.length > ALLOWED_IPS_MAX) {
    throw ValidationError.of('allowed_ips', 'max', `The allowed ips field must not have more than ${ALLOWED_IPS_MAX} items.`);
  }
  const failures: FieldFailure[] = [];
  value.forEach((entry: unknown, index) => {
    if (typeof entry !== 'string') {
      failures.push({
        field: `allowed_ips.${index}`,
        rule: 'string',
        detail: `The allowed_ips.${index} field must be a string.`,
      });
    } else if (!isIpOrCidr(entry.trim())) {
      failures.push({ field: `allowed_ips.${index}`, rule: 'ip', detail: `"${entry}" is not a valid IP address or CIDR range.` });
    }
  });
  if (failures.length > 0) throw new ValidationError(failures);
  return [...new Set((value as string[]).map((entry) => entry.trim()))];
}

/**
 * A new key for the caller, at most 25 live ones (400 beyond, Pterodactyl's
 * DisplayException). The count is taken after the insert, under a lock on the
 * user, so that concurrent requests cannot pass the limit together.
 */
export async function createAccountApiKey(
  deps: { db: Database; dialect: DialectName },
  auth: Authenticated,
  body: { description: string; allowed_ips?: unknown },
  now: number,
): Promise<{ key: ApiKeyRow; token: string }> {
  const userId = auth.user.id;
  const allowedIps = allowedIpsOf(body.allowed_ips);
  return deps.db.transaction().execute(async (trx) => {
    await lockKeysOfUser(trx, deps.dialect, userId);
    const created = await createApiKey(trx, { userId, description: body.description, allowedIps, now });
    if ((await countLiveApiKeysOfUser(trx, userId)) > API_KEY_LIMIT) {
      throw displayException('You have reached the account limit for number of API keys.');
    }
    await recordActorEvent(trx, auth.actor, userId, 'user:api-key.create', now, { identifier: created.row.identifier });
    return { key: created.row, token: created.token };
  });
}

/** Revokes one of the caller's keys: it stops working at once. Another user's key, or none, is a 404. */
export async function deleteAccountApiKey(db: Database, auth: Authenticated, identifier: string, now: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (!(await revokeApiKeyOfUser(trx, auth.user.id, identifier, now))) throw notFound();
    await recordActorEvent(trx, auth.actor, auth.user.id, 'user:api-key.delete', now, { identifier });
  });
}
