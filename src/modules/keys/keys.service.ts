import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import type { Queryable } from '../../db/database.js';
import type { ApiKeyRow } from '../../db/schema.js';
import type { Authentication } from '../../http/client-resolver.js';
import { findKeyWithUser, insertApiKey, markApiKeyUsed } from './keys.repository.js';

/**
 * Client API keys: `ptlc_` + 11 random characters form the 16-character public
 * identifier; 32 more random characters are the secret (docs/reference/authentication.md). Only a SHA-256
 * of the secret is stored: the secret has ~190 bits of entropy, so a slow hash
 * would buy nothing and cost every request.
 */
const PREFIX = 'ptlc_';
const IDENTIFIER_LENGTH = 16;
const SECRET_LENGTH = 32;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const LAST_USED_RESOLUTION_MS = 60_000;

function randomString(length: number): string {
  // Rejection sampling keeps every character equally likely.
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export async function createApiKey(
  db: Queryable,
  input: { userId: number; description: string; allowedIps: string[]; now: number },
): Promise<{ identifier: string; token: string; row: ApiKeyRow }> {
  for (const entry of input.allowedIps) {
    if (!isIpOrCidr(entry)) throw new Error(`"${entry}" is not an IP address or CIDR range`);
  }
  const identifier = PREFIX + randomString(IDENTIFIER_LENGTH - PREFIX.length);
  const secret = randomString(SECRET_LENGTH);
  const row = await insertApiKey(db, {
    user_id: input.userId,
    identifier,
    token_hash: hashSecret(secret),
    description: input.description,
    allowed_ips: JSON.stringify(input.allowedIps),
    created_at: input.now,
  });
  return { identifier, token: identifier + secret, row };
}

/**
 * The key a bearer token names, if it is ours, live, its secret matches and
 * its owner exists (401 otherwise), and `ip` is allowed (403 otherwise). The
 * key's last use is written at most once a minute, not once per request.
 */
export async function authenticateToken(db: Queryable, token: string, ip: string, now: number): Promise<Authentication> {
  const parts = splitToken(token);
  if (!parts) return { ok: false, reason: 'unknown-key' };
  // The key and its owner in one statement.
  const found = await findKeyWithUser(db, parts.identifier);
  if (!found) return { ok: false, reason: 'unknown-key' };
  const { key, user } = found;
  if (key.revoked_at !== null || !secretMatches(key, parts.secret) || !user) return { ok: false, reason: 'unknown-key' };
  if (!ipAllowed(JSON.parse(key.allowed_ips) as string[], ip)) return { ok: false, reason: 'ip-not-allowed' };
  if (key.last_used_at === null || now - key.last_used_at >= LAST_USED_RESOLUTION_MS) await markApiKeyUsed(db, key.id, now);
  return { ok: true, auth: { user, key, sessionId: null, actor: { userId: user.id, apiKeyId: key.id, ip } } };
}

/** Splits a bearer token; null when it cannot be one of ours. */
function splitToken(token: string): { identifier: string; secret: string } | null {
  if (token.length !== IDENTIFIER_LENGTH + SECRET_LENGTH || !token.startsWith(PREFIX)) return null;
  if (!/^[A-Za-z0-9_]+$/.test(token)) return null;
  return { identifier: token.slice(0, IDENTIFIER_LENGTH), secret: token.slice(IDENTIFIER_LENGTH) };
}

function secretMatches(key: ApiKeyRow, secret: string): boolean {
  const expected = Buffer.from(key.token_hash, 'hex');
  const actual = Buffer.from(hashSecret(secret), 'hex');
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

export function isIpOrCidr(entry: string): boolean {
  const [address, bits, ...rest] = entry.split('/');
  if (rest.length > 0 || address === undefined) return false;
  const version = net.isIP(address);
  if (version === 0) return false;
  if (bits === undefined) return true;
  if (!/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (version === 4 ? 32 : 128);
}

/** True when the key has no IP restriction or `ip` falls inside one of its entries. */
function ipAllowed(allowedIps: string[], ip: string): boolean {
  if (allowedIps.length === 0) return true;
  const list = new net.BlockList();
  for (const entry of allowedIps) {
    const [address, bits] = entry.split('/') as [string, string | undefined];
    const type = net.isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(bits), type);
  }
  const mapped = ip.startsWith('::ffff:') && net.isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
  return list.check(mapped, net.isIP(mapped) === 6 ? 'ipv6' : 'ipv4');
}
