import type { RawData } from 'ws';

/**
 * Wings' websocket protocol (docs/reference/power-and-console.md#websocket), as router/websocket/message.go and
 * server/events.go name it: every frame is JSON `{"event": E, "args": [...]}`,
 * args a list of strings (left out when empty, as Wings' `omitempty` does).
 */
export const INBOUND = {
  auth: 'auth',
  sendCommand: 'send command',
  setState: 'set state',
  sendLogs: 'send logs',
  sendStats: 'send stats',
} as const;

export const OUTBOUND = {
  authSuccess: 'auth success',
  tokenExpiring: 'token expiring',
  tokenExpired: 'token expired',
  jwtError: 'jwt error',
  daemonError: 'daemon error',
  daemonMessage: 'daemon message',
  status: 'status',
  consoleOutput: 'console output',
  stats: 'stats',
  /** Wings appends `:<backup uuid>` (what Pterodactyl's front end listens for). */
  backupCompleted: 'backup completed',
  backupRestoreCompleted: 'backup restore completed',
  /** docs/reference/eggs-and-installs.md: an install's start, each line of its output, its end (Wings' server/events.go). */
  installStarted: 'install started',
  installOutput: 'install output',
  installCompleted: 'install completed',
  /** Wings' answer to a frame over its rate limit: args [the event, or "global"]. */
  throttled: 'throttled',
} as const;

/** Wings' (gbrlsnchs/jwt's) wording, which clients match on: Pterodactyl's front end renews on the first and the last. */
export const JWT_ERRORS = {
  expired: 'jwt: exp claim is invalid',
  notYetValid: 'jwt: nbf claim is invalid',
  issuer: 'jwt: iss claim is invalid',
  signature: 'jwt: HMAC verification failed',
  malformed: 'jwt: malformed token',
  absent: 'jwt: no jwt present',
  noConnect: 'jwt: missing connect permission',
  serverMismatch: 'jwt: server uuid mismatch',
  otherUser: 'jwt: token is for another user',
  /** What Wings says for a token the panel revoked (a removed subuser, changed permissions). */
  revoked: 'jwt: created too far in past (denylist)',
} as const;

/**
 * Close codes (4000-4999 are the application's). Pterodactyl's front end
 * (Sockette) reconnects on any code but 1000, 1001 and 1005, and then
 * authenticates again with the token it holds, so a renewed token takes over.
 */
export const CLOSE = {
  /** The service is stopping or restarting: clients reconnect. (A frame over MAX_INBOUND_FRAME_BYTES: 1009, from `ws`.) */
  restart: 1012,
  /** After a `jwt error`: a bad, expired or foreign token, or no renewal after `token expired`. */
  authFailed: 4401,
  accessRevoked: 4403,
  serverDeleted: 4404,
  authTimeout: 4408,
  suspended: 4409,
  /** More than SEND_BUFFER_LIMIT waiting to be sent: a client that does not read. */
  tooSlow: 4413,
  tooManyFrames: 4429,
  tooManySockets: 4430,
} as const;

/** The largest frame a client may send (an auth token is about 700 bytes, a command at most 1000). */
export const MAX_INBOUND_FRAME_BYTES = 4 * 1024;
/** What may wait to be sent to one client before it is dropped (README "Live console"). */
export const SEND_BUFFER_LIMIT = 1024 * 1024;
/** Lines `send logs` answers with (Wings' websocket_log_count). */
export const HISTORY_LINES = 150;

export interface Frame {
  readonly event: string;
  readonly args: readonly string[];
}

/**
 * A client's frame, or null for anything that is not one (ignored, as Wings
 * ignores what it cannot parse). `null` in args is an empty string (what
 * Pterodactyl's front end sends for "no argument", and what Go reads it as).
 */
export function parseFrame(data: RawData): Frame | null {
  const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
  const text = bytes.toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null;
  const { event, args } = parsed as { event?: unknown; args?: unknown };
  if (typeof event !== 'string') return null;
  if (args === undefined || args === null) return { event, args: [] };
  if (!Array.isArray(args)) return null;
  const strings: string[] = [];
  for (const arg of args as unknown[]) {
    if (arg === null) strings.push('');
    else if (typeof arg === 'string') strings.push(arg);
    else return null;
  }
  return { event, args: strings };
}

export function encodeFrame(event: string, args?: readonly string[]): string {
  return JSON.stringify(args && args.length > 0 ? { event, args } : { event });
}

/** A close reason fits in a control frame: at most 123 bytes. */
export function closeReason(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  return bytes.length <= 123
    ? text
    : bytes
        .subarray(0, 120)
        .toString('utf8')
        .replace(/\uFFFD$/, '') + '...';
}

/**
 * A token bucket: `burst` frames at once, then one every `everyMs` (Go's
 * rate.NewLimiter(rate.Every(everyMs), burst), which Wings uses).
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly burst: number,
    private readonly everyMs: number,
    now: number,
  ) {
    this.tokens = burst;
    this.last = now;
  }

  take(now: number): boolean {
    this.tokens = Math.min(this.burst, this.tokens + (now - this.last) / this.everyMs);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** Wings' limits (router/websocket/limiter.go): per event kind, after a global one that is checked before parsing. */
const EVENT_LIMITS: Record<string, { burst: number; everyMs: number }> = {
  [INBOUND.auth]: { burst: 2, everyMs: 5_000 },
  [INBOUND.sendLogs]: { burst: 2, everyMs: 5_000 },
  [INBOUND.sendStats]: { burst: 4, everyMs: 1_000 },
  [INBOUND.sendCommand]: { burst: 10, everyMs: 1_000 },
};
const OTHER_EVENTS = { burst: 4, everyMs: 1_000 };
const GLOBAL = { burst: 10, everyMs: 200 };
/** Frames refused within a window of this length before the socket is closed: a client that ignores `throttled`. */
const ABUSE_WINDOW_MS = 10_000;
const ABUSE_REFUSALS = 100;

export type RateDecision = 'allow' | { throttled: string; notify: boolean } | 'abuse';

/** One socket's inbound limits. */
export class FrameLimiter {
  private readonly global: TokenBucket;
  private readonly perEvent = new Map<string, TokenBucket>();
  /** Events already told they are throttled (told once until a frame of theirs passes again). */
  private readonly told = new Set<string>();
  private windowStart: number;
  private refusals = 0;

  constructor(private readonly now: () => number) {
    this.global = new TokenBucket(GLOBAL.burst, GLOBAL.everyMs, now());
    this.windowStart = now();
  }

  /** Before the frame is even parsed (parsing costs more than the check). */
  admitRaw(): RateDecision {
    return this.decide('global', this.global);
  }

  admitEvent(event: string): RateDecision {
    // Unknown events share one bucket, so that made-up names cannot grow the map.
    const key = Object.hasOwn(EVENT_LIMITS, event) ? event : '*';
    let bucket = this.perEvent.get(key);
    if (!bucket) {
      const limit = EVENT_LIMITS[key] ?? OTHER_EVENTS;
      bucket = new TokenBucket(limit.burst, limit.everyMs, this.now());
      this.perEvent.set(key, bucket);
    }
    return this.decide(event, bucket, key);
  }

  private decide(name: string, bucket: TokenBucket, key = name): RateDecision {
    const now = this.now();
    if (bucket.take(now)) {
      this.told.delete(key);
      return 'allow';
    }
    if (now - this.windowStart > ABUSE_WINDOW_MS) {
      this.windowStart = now;
      this.refusals = 0;
    }
    this.refusals += 1;
    if (this.refusals > ABUSE_REFUSALS) return 'abuse';
    const notify = !this.told.has(key);
    this.told.add(key);
    return { throttled: name, notify };
  }
}
