import { createHash } from 'node:crypto';
import net from 'node:net';
import type { Queryable } from '../../db/database.js';
import { HttpError } from '../../http/errors.js';
import { unmapped } from '../../http/client-address.js';
import {
  clearLoginAttempts,
  countLoginAttempts,
  deleteLoginAttempt,
  deleteLoginAttemptsBefore,
  insertLoginAttempt,
} from './sessions.repository.js';

/**
 * Sign-in throttles (docs/reference/web-console.md; docs/DECISIONS.md "Sign-in throttles"), kept in
 * the database so that every instance counts the same attempts:
 * - per address, every attempt, 20 a minute;
 * - per account and address, failed attempts, 5 in 15 minutes, forgotten at
 *   a successful sign-in from that address (Laravel's ThrottlesLogins key,
 *   which Pterodactyl uses): failures from one address never refuse another;
 * - per account from all addresses, failed attempts, counted only: past 50 in
 *   15 minutes every address gets 1 failure in 15 minutes on that account
 *   instead of 5. That slows guessing spread over many addresses without ever
 *   refusing an address its first attempt, so nobody can lock a user out.
 * An attempt is written before it is judged and then counted with the others,
 * so concurrent attempts cannot all slip under a limit; a refused attempt is
 * taken back out, so that hammering on does not push the end of the wait.
 */
export interface Throttle {
  limit: number;
  windowMs: number;
}

export const ADDRESS_THROTTLE: Throttle = { limit: 20, windowMs: 60_000 };
export const PAIR_THROTTLE: Throttle = { limit: 5, windowMs: 15 * 60_000 };
/** The account's failures from everywhere past which each address is held to `PAIR_UNDER_ATTACK`. */
export const ACCOUNT_CEILING: Throttle = { limit: 50, windowMs: 15 * 60_000 };
export const PAIR_UNDER_ATTACK: Throttle = { limit: 1, windowMs: 15 * 60_000 };

/** A 429 with the seconds to wait, which the route also sends as `Retry-After`. */
export class SignInThrottledError extends HttpError {
  constructor(readonly retryAfterSeconds: number) {
    super(429, 'TooManyRequestsHttpException', `Too many login attempts. Please try again in ${retryAfterSeconds} seconds.`);
  }
}

/**
 * The part of an address one party controls as a unit: an IPv4 address, or
 * an IPv6 address's /64 (a single host is routinely given a whole /64, so
 * counting each of its 2^64 addresses apart would let one attacker dodge
 * every limit).
 */
export function addressKey(ip: string): string {
  const address = unmapped(ip);
  if (net.isIP(address) !== 6) return address;
  return `${expandIpv6(address).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address, lower case, without leading zeros (a zone id dropped). */
function expandIpv6(address: string): string[] {
  let text = address.split('%')[0]!.toLowerCase();
  // An IPv4 tail (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) is two groups.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : Array.from({ length: 8 - left.length - right.length }, () => '0');
  return [...left, ...zeros, ...right].map((group) => Number.parseInt(group, 16).toString(16));
}

export const addressBucket = (ip: string) => `ip:${addressKey(ip)}`;

/**
 * An existing account's bucket is its id, whichever of username and email
 * named it. A name that matches nobody gets a bucket of its own, so that it is
 * throttled exactly like an account (the answers must not tell which names
 * exist); it is hashed because people type passwords into the name field.
 */
export const accountBucket = (userId: number | null, input: string) =>
  userId === null ? `name:${createHash('sha256').update(input.toLowerCase()).digest('base64url')}` : `user:${userId}`;

/** An account's attempts from one address (hashed: the pair must fit the bucket column, and names are kept hashed anyway). */
export const pairBucket = (account: string, ip: string) =>
  `pair:${createHash('sha256')
    .update(`${account}|${addressKey(ip)}`)
    .digest('base64url')}`;

/** Records an attempt in `bucket`; throws SignInThrottledError (and records nothing) when the bucket is full. */
export async function takeAttempt(db: Queryable, bucket: string, throttle: Throttle, now: number): Promise<number> {
  const id = await insertLoginAttempt(db, bucket, now);
  const { count, oldest } = await countLoginAttempts(db, bucket, now - throttle.windowMs);
  if (count <= throttle.limit) return id;
  await deleteLoginAttempt(db, id);
  throw new SignInThrottledError(Math.max(1, Math.ceil(((oldest ?? now) + throttle.windowMs - now) / 1000)));
}

/** Records an attempt in `bucket` without judging it; its id, to take it back out if it succeeds. */
export function recordAttempt(db: Queryable, bucket: string, now: number): Promise<number> {
  return insertLoginAttempt(db, bucket, now);
}

/** Whether the account's failures from every address are past the ceiling. */
export async function accountUnderAttack(db: Queryable, account: string, now: number): Promise<boolean> {
  const { count } = await countLoginAttempts(db, account, now - ACCOUNT_CEILING.windowMs);
  return count >= ACCOUNT_CEILING.limit;
}

/** A successful sign-in: the pair's failures are forgotten, and the attempt is not counted as the account's failure. */
export async function forgetAttempts(db: Queryable, pair: string, accountAttemptId: number): Promise<void> {
  await clearLoginAttempts(db, pair);
  await deleteLoginAttempt(db, accountAttemptId);
}

/** Attempts older than every window count for nothing any more. */
export function pruneAttempts(db: Queryable, now: number): Promise<void> {
  const longest = Math.max(
    ADDRESS_THROTTLE.windowMs,
    PAIR_THROTTLE.windowMs,
    ACCOUNT_CEILING.windowMs,
    PAIR_UNDER_ATTACK.windowMs,
  );
  return deleteLoginAttemptsBefore(db, now - longest);
}
