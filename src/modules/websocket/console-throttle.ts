/**
 * Wings' console throttle (docs/reference/power-and-console.md#servers-outlive-the-service; Wings' `ConsoleThrottler` before its 2022
 * rewrite, whose defaults the config keeps): a server that prints more than
 * `lines` lines in one `periodMs` window is throttled for the rest of that
 * window (its lines are not forwarded) and gets one activation; activations
 * decay by one every `decayMs` (a steady tick, as Wings' timer); reaching
 * `maxTriggers` activations breaches the limit, and the server is stopped.
 * Windows and ticks are reckoned from the clock on each line, not by timers:
 * an idle server costs nothing.
 */
export interface ThrottleSettings {
  readonly lines: number;
  readonly periodMs: number;
  readonly maxTriggers: number;
  readonly decayMs: number;
}

export const DEFAULT_THROTTLE: ThrottleSettings = { lines: 2000, periodMs: 100, maxTriggers: 5, decayMs: 10_000 };

/** Wings' words, shown on the console when a server is throttled. */
export const THROTTLE_MESSAGE = 'Server is outputting console data too quickly -- throttling...';
/** Wings' words when the throttle stops a server. */
export const THROTTLE_STOP_MESSAGE = 'Your server is being stopped for outputting too much data in a short period of time.';

export type ThrottleVerdict = 'forward' | 'drop' | 'strike' | 'breach';

export class ConsoleThrottle {
  private windowStart = Number.NEGATIVE_INFINITY;
  private count = 0;
  private throttled = false;
  private activations = 0;
  /** The last decay tick reckoned with. */
  private lastDecay = Number.NaN;
  private breached = false;

  constructor(
    private readonly settings: ThrottleSettings,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * One line: `forward` it, `drop` it (throttled), `strike` (the first line
   * over the limit in this window: show the message), or `breach` (the
   * activation that reached the maximum: stop the server; reported once).
   */
  line(): ThrottleVerdict {
    const now = this.now();
    if (now - this.windowStart >= this.settings.periodMs) {
      this.windowStart = now;
      this.count = 0;
      this.throttled = false;
    }
    this.decay(now);
    this.count += 1;
    if (this.throttled) return 'drop';
    if (this.count <= this.settings.lines) return 'forward';
    this.throttled = true;
    this.activations += 1;
    if (this.activations >= this.settings.maxTriggers && !this.breached) {
      this.breached = true;
      return 'breach';
    }
    return 'strike';
  }

  /** The server (re)started: a clean slate, as Wings resets its throttler on start. */
  reset(): void {
    this.windowStart = Number.NEGATIVE_INFINITY;
    this.count = 0;
    this.throttled = false;
    this.activations = 0;
    this.breached = false;
    this.lastDecay = Number.NaN;
  }

  private decay(now: number): void {
    if (Number.isNaN(this.lastDecay)) this.lastDecay = now;
    const steps = Math.floor((now - this.lastDecay) / this.settings.decayMs);
    if (steps <= 0) return;
    this.activations = Math.max(0, this.activations - steps);
    this.lastDecay += steps * this.settings.decayMs;
  }
}
