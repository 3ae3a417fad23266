import type { AppDeps } from '../deps.js';
import { defaultCronSource, type CronSource } from '../timing/cron.js';
import { silentLogger, type SchedulerLogger } from '../timing/logger.js';
import { ScheduleChangeListener } from '../timing/wakeup.js';
import { claimDueRuns } from './claims.js';
import type { SchedulerContext } from './context.js';
import { instanceIdentity } from '../instance.js';
import { SchedulerLoop } from './loop.js';
import { OrphanRecovery } from './recovery.js';
import { RunDriver } from './runs.js';
import { realTimers, type Timers } from './sleeper.js';

/**
 * The scheduler (docs/reference/schedules.md#running-schedules; the design is in docs/SCHEDULER.md), assembled from
 * its parts: the loop that decides when to look (loop.ts), the recovery of
 * runs whose holder is gone (recovery.ts), the claiming of due runs
 * (claims.ts) and the runs themselves (runs.ts).
 *
 * State lives in the database, never only in a timer: a run is a claim on the
 * schedule's row (instance, lease, run number, cursor), so that any instance
 * can see it, renew it, resume it or close it.
 */

export interface SchedulerHandle {
  /** Look again now (schedules changed). */
  wake(): void;
  /** Stops claiming, lets a task in flight finish, and hands unfinished runs over. */
  stop(): Promise<void>;
  /** One pass now (recover orphaned runs, claim what is due), resolved when it is done. */
  tick(): Promise<void>;
  /** Resolves once none of this instance's runs is in progress. */
  idle(): Promise<void>;
  /** The id this instance stamps its claims with. */
  readonly instanceId: string;
}

interface SchedulerOptions {
  /** A label for this instance's claims (host and pid are added). */
  instanceId?: string | undefined;
  logger?: SchedulerLogger | undefined;
  /** How long a claim holds without renewal (renewed every third of it). Default 30 s. */
  leaseMs?: number | undefined;
  /** The fallback poll. Default 5 s, or 30 s on PostgreSQL while LISTEN works. */
  pollIntervalMs?: number | undefined;
  /** Schedules claimed per transaction. Default 200. */
  batchSize?: number | undefined;
  /** Real-time waiting (tests may swap it). */
  timers?: Timers | undefined;
  /** Where next_run_at comes from. Default: timing/cron.ts's default source. */
  cron?: CronSource | undefined;
  /** LISTEN for other processes' changes (PostgreSQL). Default true. */
  listen?: boolean | undefined;
}

export type SchedulerDeps = Pick<AppDeps, 'db' | 'dialect' | 'config' | 'clock' | 'daemon'> &
  Partial<Pick<AppDeps, 'jobs' | 'onSchedulesChanged' | 'serverEvents'>> &
  SchedulerOptions;

export function startScheduler(deps: SchedulerDeps): SchedulerHandle {
  const scheduler = new Scheduler(deps);
  scheduler.start();
  return scheduler;
}

const DEFAULT_LEASE_MS = 30_000;
const DEFAULT_BATCH = 200;

class Scheduler implements SchedulerHandle {
  readonly instanceId: string;
  private readonly ctx: SchedulerContext;
  private readonly runs: RunDriver;
  private readonly recovery: OrphanRecovery;
  private readonly loop: SchedulerLoop;
  private readonly listener: ScheduleChangeListener | undefined;
  private stopped: Promise<void> | undefined;

  constructor(deps: SchedulerDeps) {
    const identity = instanceIdentity(deps.instanceId);
    this.instanceId = identity.id;
    this.ctx = {
      db: deps.db,
      dialect: deps.dialect,
      config: deps.config,
      clock: deps.clock,
      daemon: deps.daemon,
      // Backups a task makes tell live consoles when they end (docs/reference/power-and-console.md#websocket), as those made through the API do.
      ...(deps.serverEvents ? { serverEvents: deps.serverEvents } : {}),
      instanceId: identity.id,
      log: deps.logger ?? silentLogger,
      leaseMs: deps.leaseMs ?? DEFAULT_LEASE_MS,
      batchSize: deps.batchSize ?? DEFAULT_BATCH,
      timers: deps.timers ?? realTimers,
      cron: deps.cron ?? defaultCronSource,
    };
    if (deps.dialect === 'postgres' && (deps.listen ?? true)) {
      this.listener = new ScheduleChangeListener(deps.config.databaseUrl, () => this.wake(), this.ctx.log);
    }
    this.runs = new RunDriver(this.ctx);
    this.recovery = new OrphanRecovery(this.ctx, identity, this.runs);
    this.loop = new SchedulerLoop(this.ctx, () => this.pass(), { listener: this.listener, pollIntervalMs: deps.pollIntervalMs });
  }

  start(): void {
    this.loop.start();
    this.runs.startRenewing();
  }

  wake(): void {
    this.loop.wake();
  }

  tick(): Promise<void> {
    return this.loop.tick();
  }

  idle(): Promise<void> {
    return this.runs.idle();
  }

  stop(): Promise<void> {
    this.stopped ??= this.shutdown();
    return this.stopped;
  }

  private async shutdown(): Promise<void> {
    const loopDone = this.loop.stop();
    this.runs.stop();
    await loopDone;
    // Runs waiting out a time_offset return at once; a task being carried out finishes and is recorded.
    await this.runs.idle();
    await this.recovery.handOver();
    await this.listener?.stop();
    this.loop.releaseTicks();
  }

  /** Recover orphaned runs, then claim (or skip) everything due. True when anything changed. */
  private async pass(): Promise<boolean> {
    // Starting runs comes first: finished tasks are recorded once the claims are written.
    const release = this.runs.holdSteps();
    try {
      const recovered = await this.recovery.recover(this.loop.pollIntervalMs());
      const claimed = await claimDueRuns(this.ctx, this.runs);
      return recovered || claimed;
    } finally {
      release();
    }
  }
}
