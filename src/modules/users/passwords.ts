import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Password hashing (docs/reference/web-console.md): scrypt, memory-hard, from node:crypto (no native
 * addon to build; docs/DECISIONS.md "Sign-in for people"). Stored
 * self-describing as `scrypt$N$r$p$salt$hash` (salt and hash in base64), so the
 * parameters can be raised later without making older hashes unreadable.
 * N=2^15, r=8 (32 MiB) takes ~85 ms on the machines this runs on; 2^16 doubles
 * both. PASSWORD_HASH_COST (log2 of N, 10 to 20, default 15) sets it for new
 * hashes, as Laravel's BCRYPT_ROUNDS does: the test suite runs with 10, since
 * it hashes thousands of passwords and measures none of them.
 */
export const DEFAULT_PASSWORD_HASH_COST = 15;
export const PASSWORD_HASH_COST_RANGE = { min: 10, max: 20 } as const;

/** PASSWORD_HASH_COST as log2 of N, or null when it is not a whole number in range (src/config.ts refuses it then). */
export function parsePasswordHashCost(raw: string | undefined): number | null {
  if (raw === undefined || raw.trim() === '') return DEFAULT_PASSWORD_HASH_COST;
  if (!/^\d+$/.test(raw.trim())) return null;
  const value = Number(raw);
  return value >= PASSWORD_HASH_COST_RANGE.min && value <= PASSWORD_HASH_COST_RANGE.max ? value : null;
}

/** Read from the environment once: every process that hashes (the service, the CLI, a worker) has the same. */
const COST = 2 ** (parsePasswordHashCost(process.env.PASSWORD_HASH_COST) ?? DEFAULT_PASSWORD_HASH_COST);
const BLOCK_SIZE = 8;
const PARALLELISM = 1;
const SALT_BYTES = 16;
const HASH_BYTES = 32;
/** What a stored hash may ask for: bounds the work a corrupted or planted row can cause. */
const MAX_COST = 2 ** 20;
const MAX_MEMORY = 256 * 1024 * 1024;

export const PASSWORD_MIN_CHARACTERS = 8;
export const PASSWORD_MAX_BYTES = 1024;

/** Why `password` cannot be one, or null: at least 8 characters, at most 1024 bytes (UTF-8). */
export function passwordProblem(password: string): string | null {
  if ([...password].length < PASSWORD_MIN_CHARACTERS) return `at least ${PASSWORD_MIN_CHARACTERS} characters`;
  if (Buffer.byteLength(password, 'utf8') > PASSWORD_MAX_BYTES) return `at most ${PASSWORD_MAX_BYTES} bytes`;
  return null;
}

interface Parameters {
  cost: number;
  blockSize: number;
  parallelism: number;
  salt: Buffer;
  hash: Buffer;
}

function derive(password: string, salt: Buffer, length: number, p: Omit<Parameters, 'salt' | 'hash'>): Promise<Buffer> {
  const options: ScryptOptions = {
    N: p.cost,
    r: p.blockSize,
    p: p.parallelism,
    // Node's default ceiling (32 MiB) is exactly what N=2^15, r=8 needs, with no room for its bookkeeping.
    maxmem: 128 * p.cost * p.blockSize * 2 + 1024 * 1024,
  };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, length, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const params = { cost: COST, blockSize: BLOCK_SIZE, parallelism: PARALLELISM };
  const hash = await derive(password, salt, HASH_BYTES, params);
  return ['scrypt', COST, BLOCK_SIZE, PARALLELISM, salt.toString('base64'), hash.toString('base64')].join('$');
}

function parse(stored: string): Parameters | null {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return null;
  const [cost, blockSize, parallelism] = parts.slice(1, 4).map((n) => (/^\d{1,8}$/.test(n!) ? Number(n) : NaN)) as [
    number,
    number,
    number,
  ];
  const salt = Buffer.from(parts[4]!, 'base64');
  const hash = Buffer.from(parts[5]!, 'base64');
  const powerOfTwo = cost > 1 && (cost & (cost - 1)) === 0;
  if (!powerOfTwo || cost > MAX_COST || !(blockSize >= 1 && blockSize <= 16) || !(parallelism >= 1 && parallelism <= 4))
    return null;
  if (128 * cost * blockSize > MAX_MEMORY || salt.length < 8 || hash.length < 16 || hash.length > 64) return null;
  return { cost, blockSize, parallelism, salt, hash };
}

/**
 * Whether `password` is the one `stored` was made from. `stored` null (a user
 * without a password, or no user at all) is false after the same work as a
 * real check, so the time taken does not tell whether the account exists.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const params = stored === null ? null : parse(stored);
  if (!params) {
    await derive(password, DUMMY_SALT, HASH_BYTES, { cost: COST, blockSize: BLOCK_SIZE, parallelism: PARALLELISM });
    return false;
  }
  const actual = await derive(password, params.salt, params.hash.length, params);
  return timingSafeEqual(actual, params.hash);
}

const DUMMY_SALT = randomBytes(SALT_BYTES);
