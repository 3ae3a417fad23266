import type { AppDeps } from '../deps.js';
import type { CronSource } from '../timing/cron.js';
import type { SchedulerLogger } from '../timing/logger.js';
import type { Timers } from './sleeper.js';

/** What every part of one scheduler instance shares: its dependencies, its identity and its settings. */
export interface SchedulerContext extends Pick<AppDeps, 'db' | 'dialect' | 'config' | 'clock' | 'daemon' | 'serverEvents'> {
  /** The id this instance stamps its claims with (instance.ts). */
  readonly instanceId: string;
  readonly log: SchedulerLogger;
  /** How long a claim holds without renewal. */
  readonly leaseMs: number;
  /** Schedules claimed (or recovered) per transaction. */
  readonly batchSize: number;
  readonly timers: Timers;
  readonly cron: CronSource;
}
