import path from 'node:path';
import fs from 'node:fs';
import { parse as parseDotenv } from 'dotenv';
import { decodeAppKey } from './app-key.js';
import { invalidProxyEntry } from './http/client-address.js';
import { parsePasswordHashCost, PASSWORD_HASH_COST_RANGE } from './modules/users/passwords.js';
import { DEFAULT_SERVER_NETWORK, parseAddressPool } from './server-address-pool.js';

/** The service's configuration, read once from the environment (and `.env`), validated and frozen. */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: string;
  readonly dataDir: string;
  readonly timezone: string;
  readonly appUrl: string;
  readonly rateLimitPerMinute: number;
  readonly scheduler: boolean;
  readonly trustProxy: false | string[];
  readonly logLevel: string;
  readonly scheduleTaskLimit: number;
  readonly activityPruneDays: number;
  /** Memory for rendered activity listings, in MiB; 0 turns the cache off. */
  readonly activityCacheMb: number;
  readonly bootstrap: boolean;
  /** Size in MiB (fractions allowed) at which a server's console log is rotated, keeping one previous file. */
  readonly consoleLogMb: number;
  /** Entries a backup archive may hold for a restore to be attempted (docs/reference/backups-and-restores.md#durability); more fails the restore before any change. */
  readonly restoreMaxEntries: number;
  /** Whether server processes run in containers (docs/reference/containment.md): `auto` where the machine allows it. */
  readonly containment: 'auto' | 'on' | 'off';
  /** The uid and gid confined server processes run as when SERVER_UID_RANGE is off (or a server has no uid slot). */
  readonly serverUid: number;
  /** What a graceful shutdown does to running servers (docs/reference/power-and-console.md#servers-outlive-the-service): `keep` leaves confined ones to their monitors for the next start to adopt. */
  readonly serversOnShutdown: 'keep' | 'stop';
  /** Wings' console throttle (docs/reference/power-and-console.md#servers-outlive-the-service): more than `lines` in `periodMs` is not forwarded; `maxTriggers` within the decay stops the server. */
  readonly consoleThrottle: {
    readonly lines: number;
    readonly periodMs: number;
    readonly maxTriggers: number;
    readonly decayMs: number;
  };
  /** SERVER_NETWORK: confined servers' inside addresses (docs/reference/network-and-allocations.md), an IPv4 CIDR. */
  readonly serverNetwork: string;
  /** SERVER_UID_RANGE: each confined server runs as first + its uid slot (docs/reference/containment.md); null = all as serverUid. */
  readonly serverUidRange: { readonly first: number; readonly last: number } | null;
  /** PASSWORD_HASH_COST: log2 of scrypt's N for new password hashes (default 15). */
  readonly passwordHashCost: number;
  /** SFTP_PORT (docs/reference/files-and-sftp.md): where the SFTP server listens; 0 = no SFTP server. */
  readonly sftpPort: number;
  /** SFTP_HOST: the address the SFTP server binds and `sftp_details` names (default HOST). */
  readonly sftpHost: string;
  /** UPLOAD_LIMIT_MB: the largest upload a signed upload URL takes, in MiB. */
  readonly uploadLimitMb: number;
  /** FILE_EDIT_MAX_MB: the largest file `GET /files/contents` returns, in MiB. */
  readonly fileEditMaxMb: number;
  /** APP_KEY as given (validated), null when unset: src/app-key.ts's loadAppKey then uses the one in DATA_DIR. */
  readonly appKey: string | null;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

/** The environment wins over `.env` (docs/reference/configuration.md). */
export function readEnvironment(cwd = process.cwd(), env: Env = process.env): Env {
  const file = path.join(cwd, '.env');
  const fromFile = fs.existsSync(file) ? parseDotenv(fs.readFileSync(file)) : {};
  return { ...fromFile, ...env };
}

/** PASSWORD_HASH_COST: log2 of scrypt's N for new password hashes (src/modules/users/passwords.ts reads it too). */
function passwordHashCost(env: Env): number {
  const cost = parsePasswordHashCost(env.PASSWORD_HASH_COST);
  if (cost === null) {
    const { min, max } = PASSWORD_HASH_COST_RANGE;
    throw new ConfigError(`PASSWORD_HASH_COST must be a whole number between ${min} and ${max}, got "${env.PASSWORD_HASH_COST}"`);
  }
  return cost;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** A positive decimal number (fractions allowed) in (0, max]. */
function positiveDecimal(env: Env, name: string, fallback: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d+(\.\d+)?$|^\.\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a positive number, got "${raw}"`);
  const value = Number(raw);
  if (value <= 0 || value > max) throw new ConfigError(`${name} must be above 0 and at most ${max}, got ${value}`);
  return value;
}

function onOff(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['on', 'true', '1', 'yes'].includes(raw)) return true;
  if (['off', 'false', '0', 'no'].includes(raw)) return false;
  throw new ConfigError(`${name} must be "on" or "off", got "${env[name]}"`);
}

function timezone(env: Env): string {
  const zone = env.APP_TIMEZONE?.trim() || 'UTC';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
  } catch {
    throw new ConfigError(`APP_TIMEZONE must be an IANA time zone, got "${zone}"`);
  }
  return zone;
}

function appKey(env: Env): string | null {
  const raw = env.APP_KEY?.trim();
  if (!raw) return null;
  if (!decodeAppKey(raw))
    throw new ConfigError('APP_KEY must be at least 32 bytes in base64 (e.g. the output of: openssl rand -base64 32)');
  return raw;
}

/** TRUST_PROXY: off, or the proxies' addresses and CIDR ranges, exactly (no "on": trusting every peer lets anyone claim any address). */
function trustedProxies(env: Env): false | string[] {
  const raw = env.TRUST_PROXY?.trim();
  if (!raw || raw.toLowerCase() === 'off') return false;
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const invalid = invalidProxyEntry(entries);
  if (invalid !== undefined || entries.length === 0) {
    throw new ConfigError(
      `TRUST_PROXY must be off or the proxies' IP addresses or CIDR ranges, comma-separated, got "${invalid ?? raw}"`,
    );
  }
  return entries;
}

/** `FIRST-LAST` (inclusive, never 0) or `off`. */
function uidRange(env: Env): Config['serverUidRange'] {
  const raw = env.SERVER_UID_RANGE?.trim() || '200000-299999';
  if (raw.toLowerCase() === 'off') return null;
  const match = /^(\d+)-(\d+)$/.exec(raw);
  const first = Number(match?.[1]);
  const last = Number(match?.[2]);
  if (!match || first < 1 || last < first || last > 2_147_483_646)
    throw new ConfigError(`SERVER_UID_RANGE must be FIRST-LAST (uids from 1 to 2147483646, FIRST ≤ LAST) or "off", got "${raw}"`);
  return { first, last };
}

function containmentMode(env: Env): Config['containment'] {
  const raw = env.CONTAINMENT?.trim().toLowerCase() || 'auto';
  if (raw !== 'auto' && raw !== 'on' && raw !== 'off')
    throw new ConfigError(`CONTAINMENT must be "auto", "on" or "off", got "${env.CONTAINMENT}"`);
  return raw;
}

/** docs/reference/network-and-allocations.md: the pool confined servers' inside addresses come from, a /30 each. */
function serverNetwork(env: Env): string {
  const raw = env.SERVER_NETWORK?.trim() || DEFAULT_SERVER_NETWORK;
  try {
    return parseAddressPool(raw).cidr;
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

export function loadConfig(env: Env = readEnvironment()): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST?.trim() || '127.0.0.1';
  const dataDir = path.resolve(env.DATA_DIR?.trim() || './data');
  const databaseUrl = env.DATABASE_URL?.trim() || `sqlite:${path.join(dataDir, 'quetzal.sqlite')}`;
  if (!/^(sqlite:|postgres(ql)?:\/\/)/.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with sqlite: or postgres://');
  }
  const appUrl = (env.APP_URL?.trim() || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  return Object.freeze({
    port,
    host,
    databaseUrl,
    dataDir,
    timezone: timezone(env),
    appUrl,
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', 720, 1, 1_000_000),
    scheduler: onOff(env, 'SCHEDULER', true),
    trustProxy: trustedProxies(env),
    logLevel: env.LOG_LEVEL?.trim() || 'info',
    scheduleTaskLimit: integer(env, 'SCHEDULE_TASK_LIMIT', 10, 0, 1000),
    activityPruneDays: integer(env, 'ACTIVITY_PRUNE_DAYS', 90, 1, 36500),
    activityCacheMb: integer(env, 'ACTIVITY_CACHE_MB', 16, 0, 4096),
    bootstrap: onOff(env, 'QUETZAL_BOOTSTRAP', true),
    consoleLogMb: positiveDecimal(env, 'CONSOLE_LOG_MB', 50, 1_048_576),
    restoreMaxEntries: integer(env, 'RESTORE_MAX_ENTRIES', 1_000_000, 1, 1_000_000_000),
    containment: containmentMode(env),
    // Never 0: a confined process must not be root.
    serverUid: integer(env, 'SERVER_UID', 988, 1, 2_147_483_646),
    serverNetwork: serverNetwork(env),
    serverUidRange: uidRange(env),
    appKey: appKey(env),
    passwordHashCost: passwordHashCost(env),
    sftpPort: integer(env, 'SFTP_PORT', 2022, 0, 65535),
    sftpHost: env.SFTP_HOST?.trim() || host,
    uploadLimitMb: integer(env, 'UPLOAD_LIMIT_MB', 1024, 1, 1_048_576),
    fileEditMaxMb: positiveDecimal(env, 'FILE_EDIT_MAX_MB', 4, 1024),
    serversOnShutdown: serversOnShutdown(env),
    // Wings' defaults: `throttles.lines` 2000 per `line_reset_interval` 100 ms, `maximum_trigger_count` 5, `decay_interval` 10 s.
    consoleThrottle: Object.freeze({
      lines: integer(env, 'CONSOLE_THROTTLE_LINES', 2000, 1, 100_000_000),
      periodMs: integer(env, 'CONSOLE_THROTTLE_PERIOD_MS', 100, 1, 3_600_000),
      maxTriggers: integer(env, 'CONSOLE_THROTTLE_MAX_TRIGGERS', 5, 1, 1_000_000),
      decayMs: integer(env, 'CONSOLE_THROTTLE_DECAY_MS', 10_000, 1, 86_400_000),
    }),
  });
}

function serversOnShutdown(env: Env): 'keep' | 'stop' {
  const raw = env.SERVERS_ON_SHUTDOWN?.trim() || 'keep';
  if (raw !== 'keep' && raw !== 'stop') throw new ConfigError(`SERVERS_ON_SHUTDOWN must be keep or stop, got "${raw}"`);
  return raw;
}
