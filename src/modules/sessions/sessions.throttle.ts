import { createHash } from 'node:crypto';
import type { Queryable } from '../../db/database.js';
import { HttpError } from '../../http/errors.js';
import {
  clearLoginAttempts,
  countLoginAttempts,
  deleteLoginAttempt,
  deleteLoginAttemptsBefore,
  insertLoginAttempt,
} from './sessions.repository.js';

/**
 * Sign-in throttles (SPEC 12), kept in the database so that every instance
 * counts the same attempts: per IP, every attempt, 20 a minute; per account,
 * failed attempts, 5 in 15 minutes, forgotten at a successful sign-in. An
 * attempt is written before it is judged and then counted with the others, so
 * concurrent attempts cannot all slip under the limit; a refused attempt is
 * taken back out, so that hammering on does not push the end of the wait.
 */
export interface Throttle {
  limit: number;
  windowMs: number;
}

export const IP_THROTTLE: Throttle = { limit: 20, windowMs: 60_000 };
export const ACCOUNT_THROTTLE: Throttle = { limit: 5, windowMs: 15 * 60_000 };

/** A 429 with the seconds to wait, which the route also sends as `Retry-After`. */
export class SignInThrottledError extends HttpError {
  constructor(readonly retryAfterSeconds: number) {
    super(429, 'TooManyRequestsHttpException', `Too many login attempts. Please try again in ${retryAfterSeconds} seconds.`);
  }
}

export const ipBucket = (ip: string) => `ip:${ip}`;

/**
 * An existing account's bucket is its id, whichever of username and email
 * named it. A name that matches nobody gets a bucket of its own, so that it is
 * throttled exactly like an account (the answers must not tell which names
 * exist); it is hashed because people type passwords into the name field.
 */
export const accountBucket = (userId: number | null, input: string) =>
  userId === null ? `name:${createHash('sha256').update(input.toLowerCase()).digest('base64url')}` : `user:${userId}`;

/** Records an attempt in `bucket`; throws SignInThrottledError (and records nothing) when the bucket is full. */
export async function takeAttempt(db: Queryable, bucket: string, throttle: Throttle, now: number): Promise<void> {
  const id = await insertLoginAttempt(db, bucket, now);
  const { count, oldest } = await countLoginAttempts(db, bucket, now - throttle.windowMs);
  if (count <= throttle.limit) return;
  await deleteLoginAttempt(db, id);
  throw new SignInThrottledError(Math.max(1, Math.ceil(((oldest ?? now) + throttle.windowMs - now) / 1000)));
}

/** A successful sign-in: the account's failures are forgotten. */
export function forgetAttempts(db: Queryable, bucket: string): Promise<void> {
  return clearLoginAttempts(db, bucket);
}

/** Attempts older than every window count for nothing any more. */
export function pruneAttempts(db: Queryable, now: number): Promise<void> {
  return deleteLoginAttemptsBefore(db, now - Math.max(IP_THROTTLE.windowMs, ACCOUNT_THROTTLE.windowMs));
}
