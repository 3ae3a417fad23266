/**
 * Per-user request budget over a fixed one-minute window (docs/reference/authentication.md). Kept in this
 * process's memory: with several instances each enforces its own budget.
 */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  retryAfterSeconds: number;
}

export class RateLimiter {
  private readonly windows = new Map<number, { start: number; count: number }>();
  private lastSweep = 0;

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number,
  ) {}

  take(userId: number): RateDecision {
    const now = this.now();
    this.sweep(now);
    let window = this.windows.get(userId);
    if (!window || now - window.start >= 60_000) {
      window = { start: now, count: 0 };
      this.windows.set(userId, window);
    }
    const retryAfterSeconds = Math.max(1, Math.ceil((window.start + 60_000 - now) / 1000));
    if (window.count >= this.perMinute) {
      return { allowed: false, limit: this.perMinute, remaining: 0, retryAfterSeconds };
    }
    window.count += 1;
    return { allowed: true, limit: this.perMinute, remaining: this.perMinute - window.count, retryAfterSeconds };
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [userId, window] of this.windows) {
      if (now - window.start >= 60_000) this.windows.delete(userId);
    }
  }
}
