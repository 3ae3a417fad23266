import type { AppDeps } from '../../deps.js';
import type { BackupRestoreRow, ServerRow } from '../../db/schema.js';
import { claimantDiedOrRebooted, claimantIsDead, processInstance } from '../../instance.js';
import { recordActivity, SYSTEM_ACTOR } from '../activity/activity.recorder.js';
import { findServerById } from '../servers/servers.repository.js';
import { daemonServer } from '../servers/servers.service.js';
import { findBackupById, releaseServerFromRestore } from './backups.repository.js';
import { fileOperationLeases } from './file-operation-leases.js';
import {
  deleteOwnedRestore,
  deleteRestoreOfServer,
  failBackupInFlight,
  findAbandonedBackups,
  findAbandonedRestores,
  findExistingRestoreIds,
  findFileOperationOwners,
  giveBackRestore,
  takeOverRestore,
} from './file-operations.repository.js';

/**
 * Restores and backups whose instance died (docs/reference/backups-and-restores.md#durability, docs/RESTORE.md "Crash
 * safety"): run at every start of `serve` and `worker`, before HTTP or the
 * scheduler, and then every RECOVERY_INTERVAL_MS, so that a live instance takes
 * over a dead one's work within a minute.
 */
export const RECOVERY_INTERVAL_MS = 15_000;

type RecoveryDeps = Pick<AppDeps, 'db' | 'clock' | 'daemon'>;

export interface RecoveryLog {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface RecoveryReport {
  restored: number;
  rolledBack: number;
  failedBackups: number;
  sweptFolders: number;
}

export async function recoverFileOperations(deps: RecoveryDeps, log: RecoveryLog): Promise<RecoveryReport> {
  const report: RecoveryReport = { restored: 0, rolledBack: 0, failedBackups: 0, sweptFolders: 0 };
  const self = processInstance();
  const owners = await findFileOperationOwners(deps.db);
  const others = owners.filter((owner) => owner !== self.id);
  // A restore's files say whether it is this machine's (recoverRestore hands back one that is not), so a
  // restore of this machine's previous boot is taken at once; a backup's only by a process seen dead, or its lease.
  const deadOwners = others.filter((owner) => claimantIsDead(owner, self));
  const rebootedOwners = others.filter((owner) => claimantDiedOrRebooted(owner, self));
  const leases = fileOperationLeases(deps);
  const now = deps.clock.now();

  for (const row of await findAbandonedRestores(deps.db, { now, deadOwners: rebootedOwners })) {
    if (leases.holdsRestore(row.id)) continue;
    try {
      const outcome = await recoverRestore(deps, row);
      if (outcome === 'restored') report.restored += 1;
      if (outcome === 'rolled-back') report.rolledBack += 1;
      if (outcome !== undefined) log.info({ restore: row.id, server: row.server_id, outcome }, 'interrupted restore recovered');
    } catch (err) {
      // Left as it is: the lease taken runs out and a later pass tries again (or an operator forces it, docs/reference/configuration.md).
      log.error({ err, restore: row.id, server: row.server_id }, 'interrupted restore could not be recovered');
    }
  }

  for (const backup of await findAbandonedBackups(deps.db, { now, deadOwners })) {
    if (leases.holdsBackup(backup.id)) continue;
    try {
      if (await failAbandonedBackup(deps, backup.id, backup.server_id, backup.uuid)) report.failedBackups += 1;
    } catch (err) {
      log.error({ err, backup: backup.uuid }, 'interrupted backup could not be marked failed');
    }
  }

  report.sweptFolders = await sweepLeftoverFolders(deps, log);
  return report;
}

/** Takes the restore over, settles its files, records the outcome, drops its folder. Undefined: not this node's. */
async function recoverRestore(deps: RecoveryDeps, row: BackupRestoreRow): Promise<'restored' | 'rolled-back' | undefined> {
  const leases = fileOperationLeases(deps);
  if (!(await takeOverRestore(deps.db, row.id, row.owner, leases.owner, leases.leaseUntil()))) return undefined;
  const release = leases.holdRestore(row.id);
  try {
    const server = await findServerById(deps.db, row.server_id);
    // The server is gone (its row cascades): only the folder may remain, and the sweep takes it.
    if (!server) return undefined;
    const outcome = await deps.daemon.recoverRestore(daemonServer(server), row.id);
    if (outcome === 'not-here') {
      await giveBackRestore(deps.db, row, leases.owner);
      return undefined;
    }
    await recordRecoveredRestore(deps, server, row, outcome);
    await deps.daemon.discardRestore(row.id).catch(() => undefined);
    return outcome;
  } finally {
    release();
  }
}

async function recordRecoveredRestore(
  deps: RecoveryDeps,
  server: ServerRow,
  row: BackupRestoreRow,
  outcome: 'restored' | 'rolled-back',
): Promise<void> {
  const owner = fileOperationLeases(deps).owner;
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    if (!(await deleteOwnedRestore(trx, row.id, owner))) return;
    await releaseServerFromRestore(trx, server.id, now);
    const backup = await findBackupById(trx, row.backup_id);
    await recordActivity(trx, {
      serverId: server.id,
      event: outcome === 'restored' ? 'server:backup.restore-complete' : 'server:backup.restore-failed',
      actor: SYSTEM_ACTOR,
      properties: outcome === 'restored' ? { name: backup?.name ?? null } : { name: backup?.name ?? null, reason: 'interrupted' },
      timestamp: now,
    });
  });
}

/** Marks the backup failed and logs `server:backup.fail` in one transaction, then removes its partial archive. */
async function failAbandonedBackup(deps: RecoveryDeps, backupId: number, serverId: number, uuid: string): Promise<boolean> {
  const now = deps.clock.now();
  const failed = await deps.db.transaction().execute(async (trx) => {
    const row = await failBackupInFlight(trx, backupId, now);
    if (!row) return undefined;
    await recordActivity(trx, {
      serverId,
      event: 'server:backup.fail',
      actor: SYSTEM_ACTOR,
      properties: { name: row.name, reason: 'interrupted' },
      timestamp: now,
    });
    return row;
  });
  if (!failed) return false;
  const server = await findServerById(deps.db, serverId);
  if (server) await deps.daemon.discardBackup(daemonServer(server), uuid);
  return true;
}

/**
 * Restore folders on this node with no restore row: their outcome is recorded
 * (or was forced), and only the files remain. Settled first (a journal still
 * there is run to its end, which is then a no-op or finishes a forced one),
 * then removed. Folders are listed before rows are read, and a row is inserted
 * before its folder is made, so a restore just begun is never taken for one.
 */
async function sweepLeftoverFolders(deps: RecoveryDeps, log: RecoveryLog): Promise<number> {
  const ids = await deps.daemon.listRestores();
  if (ids.length === 0) return 0;
  const live = await findExistingRestoreIds(deps.db, ids);
  const leases = fileOperationLeases(deps);
  let swept = 0;
  for (const id of ids) {
    if (live.has(id) || leases.holdsRestore(id)) continue;
    try {
      await deps.daemon.discardRestore(id);
      swept += 1;
    } catch (err) {
      log.error({ err, restore: id }, 'leftover restore folder could not be removed');
    }
  }
  return swept;
}

/**
 * `server:status --set none --force` (docs/reference/configuration.md): clears a restore that recovery
 * could not finish. In one transaction the restore row goes, the status
 * becomes null and `server:backup.restore-failed` (reason `forced`) is
 * logged; then its folder on this node is settled and removed.
 */
export async function forceClearRestore(deps: RecoveryDeps, server: ServerRow): Promise<void> {
  const now = deps.clock.now();
  const removed = await deps.db.transaction().execute(async (trx) => {
    const row = await deleteRestoreOfServer(trx, server.id);
    await releaseServerFromRestore(trx, server.id, now);
    // A restore stuck from before migration 005 has no row: the status change is logged all the same.
    const backup = row ? await findBackupById(trx, row.backup_id) : undefined;
    await recordActivity(trx, {
      serverId: server.id,
      event: 'server:backup.restore-failed',
      actor: SYSTEM_ACTOR,
      properties: { name: backup?.name ?? null, reason: 'forced' },
      timestamp: now,
    });
    return row;
  });
  if (removed) await deps.daemon.discardRestore(removed.id);
}

/** Runs recovery every RECOVERY_INTERVAL_MS until stopped; a pass still running when the next is due skips it. */
export function startFileOperationRecovery(deps: RecoveryDeps, log: RecoveryLog): { stop(): Promise<void> } {
  let pass: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    if (pass) return;
    pass = recoverFileOperations(deps, log)
      .catch((err: unknown) => log.error({ err }, 'file operation recovery failed'))
      .finally(() => (pass = undefined));
  }, RECOVERY_INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await pass;
    },
  };
}
