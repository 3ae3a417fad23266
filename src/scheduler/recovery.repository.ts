import type { Queryable } from '../db/database.js';
import type { ScheduleRow } from '../db/schema.js';
import { ONE } from './sql-flags.js';

/**
 * Leases: renewing this instance's, handing them back at shutdown, and
 * finding and taking over runs whose holder is gone.
 */

/** Keeps this instance's live runs claimed (chunked: a long IN list is fine, an unbounded one is not). */
export async function renewLeases(db: Queryable, instance: string, scheduleIds: number[], leaseExpiresAt: number): Promise<void> {
  for (let i = 0; i < scheduleIds.length; i += 500) {
    await db
      .updateTable('schedules')
      .set({ lease_expires_at: leaseExpiresAt })
      .where('claimed_by', '=', instance)
      .where('is_processing', '=', ONE)
      .where('id', 'in', scheduleIds.slice(i, i + 500))
      .execute();
  }
}

/** At shutdown: hand this instance's unfinished runs over (their lease ends now), so any instance resumes them. */
export async function releaseLeases(db: Queryable, instance: string, expiredAt: number): Promise<number> {
  const result = await db
    .updateTable('schedules')
    .set({ lease_expires_at: expiredAt })
    .where('claimed_by', '=', instance)
    .where('is_processing', '=', ONE)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The instances holding runs now (to spot those that died on this machine). */
export async function findClaimants(db: Queryable): Promise<string[]> {
  const rows = await db
    .selectFrom('schedules')
    .select('claimed_by')
    .distinct()
    .where('is_processing', '=', ONE)
    .where('claimed_by', 'is not', null)
    .execute();
  return rows.map((r) => r.claimed_by).filter((c): c is string => c !== null);
}

export interface OrphanedRun extends ScheduleRow {
  server_uuid: string;
  server_startup: string | null;
  server_stop_command: string | null;
}

/**
 * Runs whose holder is gone: lease expired (or never set), or held by an
 * instance known to be dead. Never this instance's own.
 */
export async function findOrphanedRuns(
  db: Queryable,
  opts: { now: number; self: string; deadClaimants: string[]; limit: number },
): Promise<OrphanedRun[]> {
  return db
    .selectFrom('schedules')
    .innerJoin('servers', 'servers.id', 'schedules.server_id')
    .selectAll('schedules')
    .select(['servers.uuid as server_uuid', 'servers.startup as server_startup', 'servers.stop_command as server_stop_command'])
    .where('schedules.is_processing', '=', ONE)
    .where((eb) => {
      const orphaned = [eb('schedules.lease_expires_at', '<=', opts.now), eb('schedules.lease_expires_at', 'is', null)];
      if (opts.deadClaimants.length > 0) orphaned.push(eb('schedules.claimed_by', 'in', opts.deadClaimants));
      return eb.and([
        eb.or(orphaned),
        eb.or([eb('schedules.claimed_by', 'is', null), eb('schedules.claimed_by', '<>', opts.self)]),
      ]);
    })
    .orderBy('schedules.lease_expires_at')
    .limit(opts.limit)
    .execute();
}

/** Takes an orphaned run over (compare-and-set on its run number, which it bumps: the old holder is fenced off). */
export async function takeOverRun(
  db: Queryable,
  orphan: { id: number; run_number: number },
  claim: { instance: string; leaseExpiresAt: number },
): Promise<ScheduleRow | undefined> {
  return db
    .updateTable('schedules')
    .set((eb) => ({
      claimed_by: claim.instance,
      lease_expires_at: claim.leaseExpiresAt,
      run_number: eb(eb.ref('run_number'), '+', 1),
    }))
    .where('id', '=', orphan.id)
    .where('run_number', '=', orphan.run_number)
    .where('is_processing', '=', ONE)
    .returningAll()
    .executeTakeFirst();
}
