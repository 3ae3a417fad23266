import { recordActivity, SYSTEM_ACTOR } from '../modules/activity/activity.recorder.js';
import { notifySchedulesChanged } from '../timing/wakeup.js';
import type { SchedulerContext } from './context.js';
import { claimantIsDead, type InstanceIdentity } from '../instance.js';
import { findClaimants, findOrphanedRuns, releaseLeases, takeOverRun } from './recovery.repository.js';
import { closeRun } from './runs.repository.js';
import { activeRunOf, type RunDriver } from './runs.js';

/**
 * Runs whose holder is gone, and handing this instance's runs back when it
 * stops (docs/SCHEDULER.md "One pass", step 1, and "Several instances").
 */

/**
 * An orphaned run is resumed only if its holder was alive less than this long
 * ago (the longest time_offset): a restart after a long outage does not fire a
 * run's remaining tasks at a time nobody expects any more.
 */
const RESUME_WINDOW_MS = 15 * 60_000;

export class OrphanRecovery {
  private deadClaimants: string[] = [];
  private lastClaimantScan = -Infinity;

  constructor(
    private readonly ctx: SchedulerContext,
    private readonly identity: InstanceIdentity,
    private readonly runs: RunDriver,
  ) {}

  /**
   * Looks for dead holders on this machine at most once per `scanIntervalMs`,
   * then takes over every orphaned run. True when it took any.
   */
  async recover(scanIntervalMs: number): Promise<boolean> {
    if (performance.now() - this.lastClaimantScan >= scanIntervalMs) await this.scanClaimants();
    return this.recoverOrphans();
  }

  /** At shutdown: this instance's unfinished runs get an expired lease, and the others are told to look. */
  async handOver(): Promise<void> {
    const { db, dialect, log } = this.ctx;
    try {
      const released = await releaseLeases(db, this.ctx.instanceId, this.ctx.clock.now() - 1);
      if (released > 0) {
        log.info({ runs: released }, 'scheduler stopped: unfinished runs handed over');
        await notifySchedulesChanged(db, dialect);
      }
    } catch (err) {
      log.warn({ err }, 'scheduler could not hand its runs over; their leases will expire');
    }
  }

  /** Which instances holding runs died on this machine (their runs need not wait for the lease). */
  private async scanClaimants(): Promise<void> {
    this.lastClaimantScan = performance.now();
    const claimants = await findClaimants(this.ctx.db);
    this.deadClaimants = claimants.filter((c) => c !== this.ctx.instanceId && claimantIsDead(c, this.identity));
  }

  /**
   * Runs whose holder is gone. Resumed from their cursor (logged
   * `server:schedule.resume`) when the holder was alive recently and the
   * schedule's next time has not come yet; otherwise closed (logged
   * `server:schedule.abandon`), and a due time runs afresh.
   */
  private async recoverOrphans(): Promise<boolean> {
    const { db, clock, log, instanceId, leaseMs } = this.ctx;
    const now = clock.now();
    const orphans = await findOrphanedRuns(db, {
      now,
      self: instanceId,
      deadClaimants: this.deadClaimants,
      limit: this.ctx.batchSize,
    });
    let progressed = false;
    for (const orphan of orphans) {
      const superseded = orphan.is_active === 1 && orphan.next_run_at !== null && orphan.next_run_at <= now;
      const stale = orphan.lease_expires_at !== null && now - orphan.lease_expires_at > RESUME_WINDOW_MS;
      const unknown = orphan.claimed_by === null || orphan.run_step_at === null;
      const abandon = superseded || stale || unknown;
      const taken = await db.transaction().execute(async (trx) => {
        const row = await takeOverRun(trx, orphan, { instance: instanceId, leaseExpiresAt: now + leaseMs });
        if (!row) return undefined;
        if (abandon) await closeRun(trx, { scheduleId: row.id, runNumber: row.run_number }, now);
        await recordActivity(trx, {
          serverId: row.server_id,
          event: abandon ? 'server:schedule.abandon' : 'server:schedule.resume',
          actor: SYSTEM_ACTOR,
          properties: { name: row.name },
          timestamp: now,
        });
        return row;
      });
      if (!taken) continue;
      progressed = true;
      log.info(
        { schedule: taken.id, previousHolder: orphan.claimed_by, cursor: orphan.run_cursor },
        abandon ? 'interrupted schedule run closed' : 'interrupted schedule run resumed',
      );
      if (!abandon) this.runs.launch(activeRunOf(taken, orphan, clock.now()), undefined);
    }
    return progressed;
  }
}
