/**
 * Real-time waiting, behind a small interface so that tests can swap it. The
 * scheduler decides *what* is due with the injected Clock; it only uses a timer
 * to avoid asking the database again before anything can have become due.
 */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Node's timers take at most 2^31-1 ms. */
const MAX_DELAY = 2_147_483_647;

/** One interruptible sleep at a time: `interrupt()` ends the current one early. */
export class Sleeper {
  private current: { handle: unknown; resolve: () => void } | undefined;

  constructor(private readonly timers: Timers = realTimers) {}

  sleep(ms: number): Promise<void> {
    this.interrupt();
    if (ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const entry = {
        resolve,
        handle: this.timers.setTimeout(
          () => {
            if (this.current === entry) this.current = undefined;
            resolve();
          },
          Math.min(ms, MAX_DELAY),
        ),
      };
      this.current = entry;
    });
  }

  interrupt(): void {
    const entry = this.current;
    if (!entry) return;
    this.current = undefined;
    this.timers.clearTimeout(entry.handle);
    entry.resolve();
  }
}

/** A sleep that an AbortSignal ends early (used by runs waiting out a time_offset). */
export function sleepUnlessAborted(timers: Timers, ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = () => {
      timers.clearTimeout(handle);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const handle = timers.setTimeout(done, Math.min(ms, MAX_DELAY));
    signal.addEventListener('abort', done, { once: true });
  });
}
