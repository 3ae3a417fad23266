import type { Queryable } from '../../db/database.js';
import type { UserRow } from '../../db/schema.js';

/** The rows behind an account's email and two-factor (docs/reference/accounts.md). */

/** Whether another user already has `email`, compared case-insensitively. */
export async function emailTakenByOther(db: Queryable, userId: number, email: string): Promise<boolean> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
    .where('id', '!=', userId)
    .executeTakeFirst();
  return row !== undefined;
}

export async function setEmail(db: Queryable, userId: number, email: string): Promise<void> {
  await db.updateTable('users').set({ email }).where('id', '=', userId).execute();
}

export interface TwoFactorState {
  use_totp: number;
  totp_secret: string | null;
  totp_last_step: number | null;
}

export async function findTwoFactorState(db: Queryable, userId: number): Promise<TwoFactorState | undefined> {
  const row = await db
    .selectFrom('users')
    .select(['use_totp', 'totp_secret', 'totp_last_step'])
    .where('id', '=', userId)
    .executeTakeFirst();
  return (
    row && {
      ...row,
      use_totp: Number(row.use_totp),
      totp_last_step: row.totp_last_step === null ? null : Number(row.totp_last_step),
    }
  );
}

/** A new pending secret (two-factor still off); forgets the last accepted step, which belonged to another secret. */
export async function setPendingSecret(db: Queryable, userId: number, sealed: string): Promise<void> {
  await db
    .updateTable('users')
    .set({ totp_secret: sealed, totp_last_step: null })
    .where('id', '=', userId)
    .where('use_totp', '=', 0)
    .execute();
}

/**
 * Marks `step` used if no step at or after it was: true when this call took
 * it. One statement, so two requests with the same code cannot both pass.
 */
export async function claimTotpStep(db: Queryable, userId: number, step: number): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set({ totp_last_step: step })
    .where('id', '=', userId)
    .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function setTwoFactorEnabled(db: Queryable, userId: number, enabled: boolean, now: number): Promise<void> {
  await db
    .updateTable('users')
    .set({ use_totp: enabled ? 1 : 0, totp_authenticated_at: now, ...(enabled ? {} : { totp_secret: null }) })
    .where('id', '=', userId)
    .execute();
}

export async function replaceRecoveryTokens(db: Queryable, userId: number, hashes: string[], now: number): Promise<void> {
  await db.deleteFrom('recovery_tokens').where('user_id', '=', userId).execute();
  if (hashes.length === 0) return;
  await db
    .insertInto('recovery_tokens')
    .values(hashes.map((token_hash) => ({ user_id: userId, token_hash, created_at: now })))
    .execute();
}

/** Deletes the user's recovery token with this hash: true when there was one (each is good once). */
export async function takeRecoveryToken(db: Queryable, userId: number, hash: string): Promise<boolean> {
  const rows = await db
    .deleteFrom('recovery_tokens')
    .where('user_id', '=', userId)
    .where('token_hash', '=', hash)
    .returning('id')
    .execute();
  return rows.length > 0;
}

export async function insertCheckpoint(
  db: Queryable,
  row: { id: string; user_id: number; ip: string | null; created_at: number; expires_at: number },
): Promise<void> {
  await db.insertInto('sign_in_checkpoints').values(row).execute();
}

export async function findCheckpoint(db: Queryable, id: string) {
  const row = await db
    .selectFrom('sign_in_checkpoints')
    .select(['id', 'user_id', 'expires_at'])
    .where('id', '=', id)
    .executeTakeFirst();
  return row && { ...row, expires_at: Number(row.expires_at) };
}

/** Deletes a checkpoint: true when this call did (it completes once). */
export async function deleteCheckpoint(db: Queryable, id: string): Promise<boolean> {
  const result = await db.deleteFrom('sign_in_checkpoints').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

export async function deleteExpiredCheckpoints(db: Queryable, now: number): Promise<void> {
  await db.deleteFrom('sign_in_checkpoints').where('expires_at', '<=', now).execute();
}

/** A user by id, as the rest of the code sees one (no secrets). */
export async function findUserById(db: Queryable, id: number): Promise<UserRow | undefined> {
  const row = await db
    .selectFrom('users')
    .select(['id', 'uuid', 'username', 'email', 'root_admin', 'use_totp', 'created_at'])
    .where('id', '=', id)
    .executeTakeFirst();
  return (
    row &&
    ({
      ...row,
      id: Number(row.id),
      created_at: Number(row.created_at),
      use_totp: Number(row.use_totp),
      root_admin: Number(row.root_admin),
    } as UserRow)
  );
}
