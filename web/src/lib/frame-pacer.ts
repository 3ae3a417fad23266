/**
 * The console socket's inbound rate limits, mirrored in the browser
 * (docs/reference/power-and-console.md#websocket; the service's FrameLimiter in
 * src/modules/websocket/websocket.frames.ts, itself Wings' router/websocket/limiter.go).
 *
 * Why mirror them: the socket answers a refused frame with `throttled` only
 * once until a frame of that kind passes again, so a second command refused
 * in a row would vanish without a word. Holding back here what the socket
 * would refuse keeps the command in the browser, where it can be sent again.
 * The mirror refills a little slower than the service does, so that frames
 * bunched up on the way (a late first one, the rest right behind it) are
 * still inside the service's limit when they arrive.
 */

interface Limit {
  burst: number;
  everyMs: number;
}

/** Per event kind, as the service counts them; any other event shares OTHER_EVENTS. */
const EVENT_LIMITS: Record<string, Limit> = {
  auth: { burst: 2, everyMs: 5_000 },
  'send logs': { burst: 2, everyMs: 5_000 },
  'send stats': { burst: 4, everyMs: 1_000 },
  'send command': { burst: 10, everyMs: 1_000 },
};
const OTHER_EVENTS: Limit = { burst: 4, everyMs: 1_000 };
/** Every frame, whatever its event, before the per-event limit. */
const GLOBAL: Limit = { burst: 10, everyMs: 200 };
/** How much slower than the service the mirror refills (10 %: jitter of a tenth of a refill). */
const SAFETY = 1.1;

class Bucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly limit: Limit,
    now: number,
  ) {
    this.tokens = limit.burst;
    this.last = now;
  }

  private refill(now: number): void {
    // A clock set back never takes tokens away.
    const elapsed = Math.max(0, now - this.last);
    this.tokens = Math.min(this.limit.burst, this.tokens + elapsed / (this.limit.everyMs * SAFETY));
    this.last = now;
  }

  has(now: number): boolean {
    this.refill(now);
    return this.tokens >= 1;
  }

  take(): void {
    this.tokens = Math.max(0, this.tokens - 1);
  }

  empty(now: number): void {
    this.refill(now);
    this.tokens = 0;
  }
}

/** One socket's worth of buckets: a fresh socket on the service starts full, so does a fresh pacer. */
export class FramePacer {
  private readonly global: Bucket;
  private readonly perEvent = new Map<string, Bucket>();

  constructor(private readonly now: () => number = Date.now) {
    this.global = new Bucket(GLOBAL, now());
  }

  private bucket(event: string): Bucket {
    const key = Object.hasOwn(EVENT_LIMITS, event) ? event : '*';
    let bucket = this.perEvent.get(key);
    if (!bucket) {
      bucket = new Bucket(EVENT_LIMITS[key] ?? OTHER_EVENTS, this.now());
      this.perEvent.set(key, bucket);
    }
    return bucket;
  }

  /** Whether the socket would take a frame of `event` now; if so, it is counted as sent. */
  admit(event: string): boolean {
    const now = this.now();
    const bucket = this.bucket(event);
    if (!this.global.has(now) || !bucket.has(now)) return false;
    this.global.take();
    bucket.take();
    return true;
  }

  /** The socket said `throttled` for `refused` (an event, or `global`): it has nothing left for it. */
  exhaust(refused: string): void {
    const now = this.now();
    if (refused === 'global') this.global.empty(now);
    else this.bucket(refused).empty(now);
  }
}
