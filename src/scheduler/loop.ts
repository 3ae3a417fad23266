import type { ScheduleChangeListener } from '../timing/wakeup.js';
import type { SchedulerContext } from './context.js';
import { findWakeTimes } from './due.repository.js';
import { Sleeper } from './sleeper.js';

/**
 * When the scheduler looks (docs/SCHEDULER.md "Sleeping"): one pass, then a
 * sleep until the earliest thing that can need it — the earliest
 * next_run_at, a pending manual execution, a foreign lease running out — or
 * until woken (wake() in this process, LISTEN/NOTIFY from others on
 * PostgreSQL, the fallback poll).
 */

const SQLITE_POLL_MS = 5_000;
const LISTENING_POLL_MS = 30_000;
/** A pass that found work it could not take (another instance holds it) looks again this soon. */
const RETRY_MS = 250;

export class SchedulerLoop {
  private readonly sleeper: Sleeper;
  private stopping = false;
  private wakeRequested = false;
  private done: Promise<void> = Promise.resolve();
  private pendingTicks: (() => void)[] = [];

  /** `pass` recovers and claims; it resolves true when it changed anything. */
  constructor(
    private readonly ctx: SchedulerContext,
    private readonly pass: () => Promise<boolean>,
    private readonly options: { listener?: ScheduleChangeListener | undefined; pollIntervalMs?: number | undefined },
  ) {
    this.sleeper = new Sleeper(ctx.timers);
  }

  start(): void {
    this.done = this.run();
  }

  wake(): void {
    this.wakeRequested = true;
    this.sleeper.interrupt();
  }

  /** One pass now, resolved when it is done (at once once stopping). */
  tick(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      this.pendingTicks.push(resolve);
      this.wake();
    });
  }

  /** Stops looking; resolves when the pass in progress, if any, is over. */
  stop(): Promise<void> {
    this.stopping = true;
    this.sleeper.interrupt();
    return this.done;
  }

  /** Releases tick() callers still waiting (after shutdown has handed the runs over). */
  releaseTicks(): void {
    for (const resolve of this.pendingTicks.splice(0)) resolve();
  }

  /** The fallback poll: short without a working LISTEN. */
  pollIntervalMs(): number {
    if (this.options.pollIntervalMs !== undefined) return this.options.pollIntervalMs;
    return this.options.listener?.listening ? LISTENING_POLL_MS : SQLITE_POLL_MS;
  }

  private async run(): Promise<void> {
    await this.options.listener?.start();
    let failures = 0;
    while (!this.stopping) {
      const ticks = this.pendingTicks.splice(0);
      this.wakeRequested = false;
      let progressed = false;
      try {
        progressed = await this.pass();
        failures = 0;
      } catch (err) {
        failures += 1;
        this.ctx.log.error({ err }, 'scheduler pass failed');
      }
      for (const resolve of ticks) resolve();
      if (this.stopping) break;
      if (this.wakeRequested) continue;
      let delay: number;
      try {
        delay = failures > 0 ? Math.min(30_000, 500 * 2 ** failures) : await this.delayUntilNextWork(progressed);
      } catch (err) {
        this.ctx.log.error({ err }, 'scheduler could not read its next wake-up');
        delay = 1_000;
      }
      // No await between this check and the sleep: a wake() cannot fall in between.
      if (this.wakeRequested || this.stopping) continue;
      await this.sleeper.sleep(delay);
    }
    this.releaseTicks();
  }

  private async delayUntilNextWork(progressed: boolean): Promise<number> {
    const wake = await findWakeTimes(this.ctx.db, this.ctx.instanceId);
    const now = this.ctx.clock.now();
    let target = now + this.pollIntervalMs();
    if (wake.nextDue !== null) target = Math.min(target, wake.nextDue);
    if (wake.requested !== null) target = Math.min(target, now);
    if (wake.leaseExpiry !== null) target = Math.min(target, wake.leaseExpiry);
    const delay = target - now;
    // Due work that this pass could not take is held by another instance: give it a moment.
    if (delay <= 0 && !progressed) return RETRY_MS;
    return Math.max(0, delay);
  }
}
