import { timingSafeEqual } from 'node:crypto';
import { generateSecret, generateSync } from 'otplib';
import type { Queryable } from '../../db/database.js';
import { claimTotpStep } from './account-security.repository.js';

/** RFC 6238 as authenticator apps use it: SHA-1, 6 digits, 30 s steps. */
export const TOTP_PERIOD_S = 30;
/** Steps either side of the current one whose code is accepted (clock drift): 30 s each way. */
export const TOTP_WINDOW = 1;
export const TOTP_ISSUER = 'Quetzal';

export const newTotpSecret = (): string => generateSecret();

/** Pterodactyl's `image_url_data`: the otpauth URI an authenticator app reads from a QR code. */
export function totpUri(email: string, secret: string): string {
  const issuer = encodeURIComponent(TOTP_ISSUER);
  return `otpauth://totp/${issuer}:${encodeURIComponent(email)}?secret=${encodeURIComponent(secret)}&issuer=${issuer}`;
}

const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** The step within the window whose code `code` is, or null. */
export function matchingStep(secret: string, code: string, now: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const current = Math.floor(now / 1000 / TOTP_PERIOD_S);
  let found: number | null = null;
  for (let step = current - TOTP_WINDOW; step <= current + TOTP_WINDOW; step++) {
    if (same(generateSync({ secret, epoch: step * TOTP_PERIOD_S }), code)) found = step;
  }
  return found;
}

/**
 * Checks a code and takes its step (users.totp_last_step): a code is good
 * once, and none of a step at or before the last accepted one is (replay),
 * atomically, so two requests with one code cannot both pass.
 */
export async function acceptTotpCode(db: Queryable, userId: number, secret: string, code: string, now: number): Promise<boolean> {
  const step = matchingStep(secret, code, now);
  return step !== null && claimTotpStep(db, userId, step);
}
