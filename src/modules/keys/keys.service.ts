import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import { sql } from 'kysely';
import { precompiled, type Queryable } from '../../db/database.js';
import type { ApiKeyRow, UserRow } from '../../db/schema.js';

/**
 * Client API keys: `ptlc_` + 11 random characters form the 16-character public
 * identifier; 32 more random characters are the secret (SPEC 5). Only a SHA-256
 * of the secret is stored: the secret has ~190 bits of entropy, so a slow hash
 * would buy nothing and cost every request.
 */
const PREFIX = 'ptlc_';
const IDENTIFIER_LENGTH = 16;
const SECRET_LENGTH = 32;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

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

export function hashSecret(secret: string): string {
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
  const row = await db
    .insertInto('api_keys')
    .values({
      user_id: input.userId,
      identifier,
      token_hash: hashSecret(secret),
      description: input.description,
      allowed_ips: JSON.stringify(input.allowedIps),
      created_at: input.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { identifier, token: identifier + secret, row };
}

export async function revokeApiKey(db: Queryable, identifier: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('identifier', '=', identifier)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Splits a bearer token; null when it cannot be one of ours. */
export function splitToken(token: string): { identifier: string; secret: string } | null {
  if (token.length !== IDENTIFIER_LENGTH + SECRET_LENGTH || !token.startsWith(PREFIX)) return null;
  if (!/^[A-Za-z0-9_]+$/.test(token)) return null;
  return { identifier: token.slice(0, IDENTIFIER_LENGTH), secret: token.slice(IDENTIFIER_LENGTH) };
}

export function secretMatches(key: ApiKeyRow, secret: string): boolean {
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
export function ipAllowed(allowedIps: string[], ip: string): boolean {
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

export async function findApiKeyByIdentifier(db: Queryable, identifier: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('identifier', '=', identifier).executeTakeFirst();
}

interface KeyWithUserRow extends ApiKeyRow {
  u_id: number | null;
  u_uuid: string;
  u_username: string;
  u_email: string;
  u_root_admin: UserRow['root_admin'];
  u_use_totp: UserRow['use_totp'];
  u_created_at: number;
}
const keyWithUser = precompiled<KeyWithUserRow>(
  (identifier) => sql`
    select k.id, k.user_id, k.identifier, k.token_hash, k.description, k.allowed_ips, k.last_used_at, k.revoked_at, k.created_at,
      u.id as u_id, u.uuid as u_uuid, u.username as u_username, u.email as u_email, u.root_admin as u_root_admin,
      u.use_totp as u_use_totp, u.created_at as u_created_at
    from api_keys k left join users u on u.id = k.user_id
    where k.identifier = ${identifier}`,
  1,
);

/** A key by identifier and its owner (undefined when the owner is gone), in one statement. */
export async function findKeyWithUser(
  db: Queryable,
  identifier: string,
): Promise<{ key: ApiKeyRow; user: UserRow | undefined } | undefined> {
  const r = (await keyWithUser(db, [identifier])).rows[0];
  if (!r) return undefined;
  const key: ApiKeyRow = {
    id: r.id,
    user_id: r.user_id,
    identifier: r.identifier,
    token_hash: r.token_hash,
    description: r.description,
    allowed_ips: r.allowed_ips,
    last_used_at: r.last_used_at,
    revoked_at: r.revoked_at,
    created_at: r.created_at,
  };
  const user: UserRow | undefined =
    r.u_id === null
      ? undefined
      : {
          id: r.u_id,
          uuid: r.u_uuid,
          username: r.u_username,
          email: r.u_email,
          root_admin: r.u_root_admin,
          use_totp: r.u_use_totp,
          created_at: r.u_created_at,
        };
  return { key, user };
}
