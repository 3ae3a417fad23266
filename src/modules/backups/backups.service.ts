import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { AppDeps } from '../../deps.js';
import type { Queryable } from '../../db/database.js';
import type { BackupRow, ServerRow } from '../../db/schema.js';
import { conflict, displayException, forbidden, notFound, serviceLimitExceeded } from '../../http/errors.js';
import { checkIgnored, ignoredPatterns } from './backups.ignored.js';
import { can, type Access } from '../../http/permissions.js';
import type { PageRequest } from '../../http/query.js';
import { toBoolean } from '../../http/validation.js';
import { recordActivity, SYSTEM_ACTOR, type Actor } from '../activity/activity.recorder.js';
import { daemonServer } from '../servers/servers.service.js';
import type { CreateBackupInput } from './backups.schemas.js';
import {
  countBackups,
  countNonFailedBackups,
  deleteBackupRow,
  findBackupById,
  findBackupsPage,
  findOldestRotatableBackup,
  insertBackup,
  lockServerRow,
  markBackupFinished,
  toggleBackupLock,
} from './backups.repository.js';
import { fileOperationLeases } from './file-operation-leases.js';
import { findRestoreOfServer, findVolumeChanges } from './file-operations.repository.js';
import { isVolumeChanging } from './volume-changes.js';

/**
 * Backups: creation (API, CLI, scheduled tasks), import, deletion, locking and
 * restore. Routes and admin commands call these same functions.
 */

export type BackupDeps = Pick<AppDeps, 'db' | 'clock' | 'daemon' | 'config' | 'serverEvents'>;
export type BackgroundBackupDeps = BackupDeps & Pick<AppDeps, 'jobs'>;

const RESTORING = 'This server is currently restoring a backup, please try again later.';
const NOT_CAPABLE = 'This server is not capable of creating backups.';
const CHANGING = 'Files of this server are being deleted, please try again later.';
const MIB = 1024 * 1024;

/** Why a backup of this server's volume is refused for its size (docs/reference/containment.md: over its disk limit), or null. */
async function overDiskLimit(deps: BackupDeps, server: ServerRow): Promise<string | null> {
  const target = daemonServer(server);
  const limitMiB = target.limits?.diskMiB ?? 0;
  if (limitMiB <= 0) return null;
  const used = await deps.daemon.diskUsage(target);
  if (used <= limitMiB * MIB) return null;
  return (
    `This server is using more disk space than its limit allows (${Math.ceil(used / MIB)} MiB of ${limitMiB} MiB); ` +
    'delete files before creating a backup.'
  );
}

export interface NewBackupRequest {
  name?: string | undefined;
  /** Patterns of files to leave out of the archive. */
  ignored?: string[] | undefined;
  isLocked?: boolean | undefined;
  /**
   * At the limit, delete the oldest unlocked successful backup instead of
   * refusing (what Pterodactyl does for scheduled backups).
   */
  rotate?: boolean | undefined;
}

/** "Backup at 2026-11-22 10:05:00" in the panel's time zone (Pterodactyl's default name). */
export function defaultBackupName(now: number, timezone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    })
      .formatToParts(new Date(now))
      .map((p) => [p.type, p.value]),
  );
  return `Backup at ${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
}

/** The newline-separated `ignored` member (or a backup task's payload) as a list of patterns; blank lines dropped. */
export const parseIgnored = ignoredPatterns;

/** One page of a server's backups, newest first; how many there are; and how many count toward the limit. */
export async function listBackups(db: Queryable, server: ServerRow, { page, perPage }: PageRequest) {
  const [rows, total, backupCount] = await Promise.all([
    findBackupsPage(db, server.id, perPage, (page - 1) * perPage),
    countBackups(db, server.id),
    countNonFailedBackups(db, server.id),
  ]);
  return { rows, total, backupCount };
}

/**
 * Makes room for one more backup, inside the caller's transaction (which holds
 * the server's row lock): refuses at the limit, or rotates the oldest one out.
 */
async function ensureRoomForBackup(deps: BackupDeps, trx: Queryable, server: ServerRow, rotate: boolean, now: number) {
  // A limit of 0 is reached at once: Pterodactyl's TooManyBackupsException, a 400 (docs/reference/api.md#errors).
  if (server.backup_limit <= 0) throw serviceLimitExceeded(NOT_CAPABLE);
  if ((await countNonFailedBackups(trx, server.id)) < server.backup_limit) return;
  const oldest = rotate ? await findOldestRotatableBackup(trx, server.id) : undefined;
  if (!oldest) {
    throw serviceLimitExceeded(
      `Cannot create a new backup, this server has reached its limit of ${server.backup_limit} backups.`,
    );
  }
  await deleteBackupRow(trx, oldest.id);
  await recordActivity(trx, {
    serverId: server.id,
    event: 'server:backup.delete',
    actor: SYSTEM_ACTOR,
    properties: { name: oldest.name, failed: false },
    timestamp: now,
  });
  // Inside the transaction: if the archive cannot be removed, the row stays too.
  await deps.daemon.deleteBackup(daemonServer(server), oldest.uuid);
}

/**
 * Records a new backup (not yet complete) and logs `server:backup.start`, in one
 * transaction that holds the server's row, so that concurrent creations cannot
 * overshoot the limit and a restore claimed meanwhile is seen.
 */
export async function beginBackup(
  deps: BackupDeps,
  server: ServerRow,
  actor: Actor,
  request: NewBackupRequest,
): Promise<BackupRow> {
  const now = deps.clock.now();
  const name = request.name?.trim() || defaultBackupName(now, deps.config.timezone);
  // Measured before the transaction: walking a large volume must not hold the server's row (on SQLite, the database).
  const tooBig = await overDiskLimit(deps, server);
  return deps.db.transaction().execute(async (trx) => {
    const current = await lockServerRow(trx, server.id);
    if (!current) throw notFound();
    if (current.status === 'restoring_backup') throw conflict(RESTORING);
    // Under the row lock a delete_files is accepted under too (volume-changes.ts says why that suffices).
    if (isVolumeChanging(current, now)) throw conflict(CHANGING);
    // After the refusals above (a restore or a deletion under way explains the figure), before any row is rotated out.
    // conflict(), the 409 the daemon's own refusal (DaemonBusyError) becomes, and one the admin command reports as such.
    if (tooBig !== null) throw conflict(tooBig);
    await ensureRoomForBackup(deps, trx, current, request.rotate ?? false, now);
    const backup = await insertBackup(trx, {
      uuid: randomUUID(),
      server_id: server.id,
      name,
      ignored_files: JSON.stringify(request.ignored ?? []),
      checksum: null,
      bytes: 0,
      is_successful: 0,
      is_locked: request.isLocked ? 1 : 0,
      created_at: now,
      completed_at: null,
      // Who writes the archive: if that process dies, recovery marks the backup failed (docs/reference/backups-and-restores.md#durability).
      owner: fileOperationLeases(deps).owner,
      lease_expires_at: fileOperationLeases(deps).leaseUntil(),
      // Compared once the archive is written: any other value then means the volume changed under it.
      volume_changes_at_start: current.volume_changes,
    });
    await recordActivity(trx, {
      serverId: server.id,
      event: 'server:backup.start',
      actor,
      properties: { name: backup.name, locked: backup.is_locked === 1 },
      timestamp: now,
    });
    return backup;
  });
}

export interface BackupOutcome {
  /** The finished row; undefined if the backup (or its server) was deleted meanwhile. */
  backup: BackupRow | undefined;
  /** Why the daemon failed, when it did. */
  error?: unknown;
}

/**
 * Has the daemon write the archive, then records the result and logs
 * `server:backup.complete` or `server:backup.fail` (system) in one transaction.
 * A daemon failure is recorded, not thrown.
 */
export async function completeBackup(deps: BackupDeps, server: ServerRow, backup: BackupRow): Promise<BackupOutcome> {
  const release = fileOperationLeases(deps).holdBackup(backup.id);
  try {
    return await writeAndRecordBackup(deps, server, backup);
  } finally {
    release();
  }
}

async function writeAndRecordBackup(deps: BackupDeps, server: ServerRow, backup: BackupRow): Promise<BackupOutcome> {
  let archive: { sha1: string; bytes: number } | undefined;
  let error: unknown;
  try {
    archive = await deps.daemon.createBackup(daemonServer(server), {
      uuid: backup.uuid,
      ignored: JSON.parse(backup.ignored_files) as string[],
    });
  } catch (err) {
    error = err;
    // A half-written archive is of no use to anyone.
    await deps.daemon.deleteBackup(daemonServer(server), backup.uuid).catch(() => undefined);
  }
  // Read once the archive is written: a change whose bump committed by now may have touched what was
  // archived; one that commits later deletes after the archive was done (volume-changes.ts).
  const changed = archive !== undefined && (await volumeChangedSince(deps.db, server.id, backup));
  if (changed) {
    // Removed before the failure is recorded: a crash in between leaves a row in flight, which
    // recovery fails, and never a failed row beside an archive nobody will delete.
    await deps.daemon.deleteBackup(daemonServer(server), backup.uuid).catch(() => undefined);
    archive = undefined;
    error = new Error(`backup ${backup.uuid}: the volume changed while it was written`);
  }
  const now = deps.clock.now();
  const finished = await deps.db.transaction().execute(async (trx) => {
    const row = await markBackupFinished(trx, backup.id, {
      checksum: archive ? `sha1:${archive.sha1.toLowerCase()}` : null,
      bytes: archive?.bytes ?? 0,
      successful: archive !== undefined,
      completedAt: now,
    });
    if (!row) return undefined;
    await recordActivity(trx, {
      serverId: server.id,
      event: archive ? 'server:backup.complete' : 'server:backup.fail',
      actor: SYSTEM_ACTOR,
      properties: changed ? { name: row.name, reason: VOLUME_CHANGED } : { name: row.name },
      timestamp: now,
    });
    return row;
  });
  // Deleted meanwhile, or marked failed by recovery (this process looked dead): no row names the archive.
  if (!finished && archive) await deps.daemon.deleteBackup(daemonServer(server), backup.uuid).catch(() => undefined);
  // Live consoles hear of it as from Wings (docs/reference/power-and-console.md#websocket): once the outcome is recorded.
  if (finished) {
    deps.serverEvents?.emit({
      type: 'backup-completed',
      serverUuid: server.uuid,
      backupUuid: backup.uuid,
      successful: archive !== undefined,
      checksum: archive ? archive.sha1.toLowerCase() : '',
      bytes: archive?.bytes ?? 0,
    });
  }
  return error === undefined ? { backup: finished } : { backup: finished, error };
}

const VOLUME_CHANGED = 'volume changed';

/** The server's volume-change counter moved since the backup began (a backup begun before migration 005 has none to compare). */
async function volumeChangedSince(db: Queryable, serverId: number, backup: BackupRow): Promise<boolean> {
  if (backup.volume_changes_at_start === null) return false;
  const current = await findVolumeChanges(db, serverId);
  return current !== undefined && current !== backup.volume_changes_at_start;
}

/**
 * POST /backups: starts the backup a client asks for. `is_locked` is honoured
 * only for callers who may delete backups (as Pterodactyl does).
 */
export async function requestBackup(
  deps: BackgroundBackupDeps,
  server: ServerRow,
  access: Access,
  actor: Actor,
  input: CreateBackupInput,
): Promise<BackupRow> {
  const mayDelete = can(access, 'backup.delete');
  return startBackup(deps, server, actor, {
    name: input.name,
    ignored: parseIgnored(checkIgnored(input.ignored, 'ignored')),
    isLocked: mayDelete && input.is_locked !== undefined && toBoolean(input.is_locked),
  });
}

/**
 * POST /backups and scheduled backup tasks: records the backup, answers at once,
 * and writes the archive in the background. The job rethrows a daemon failure
 * (after recording it) so that the background runner logs the reason.
 */
export async function startBackup(
  deps: BackgroundBackupDeps,
  server: ServerRow,
  actor: Actor,
  request: NewBackupRequest,
): Promise<BackupRow> {
  const backup = await beginBackup(deps, server, actor, request);
  deps.jobs.run(`backup ${backup.uuid}`, async () => {
    const outcome = await completeBackup(deps, server, backup);
    if (outcome.error !== undefined) throw outcome.error;
  });
  return backup;
}

/** The whole backup, waited for (the admin command). */
export async function createBackupAndWait(
  deps: BackupDeps,
  server: ServerRow,
  actor: Actor,
  request: NewBackupRequest,
): Promise<BackupOutcome> {
  const backup = await beginBackup(deps, server, actor, request);
  return completeBackup(deps, server, backup);
}

/**
 * Deletes a backup: 409 while it is still being made, 400 when it is locked
 * (a failed backup can be deleted locked or not, as in Pterodactyl). The archive
 * is removed inside the transaction so that a daemon failure keeps the row.
 */
export async function deleteBackup(deps: BackupDeps, server: ServerRow, backup: BackupRow, actor: Actor): Promise<void> {
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    const current = await lockServerRow(trx, server.id);
    if (!current) throw notFound();
    if (current.status === 'restoring_backup') throw conflict(RESTORING);
    const row = await findBackupById(trx, backup.id);
    if (!row || row.server_id !== server.id) throw notFound();
    if (row.completed_at === null) throw conflict('This backup cannot be deleted while it is still being created.');
    if (row.is_locked === 1 && row.is_successful === 1)
      throw displayException('Cannot delete a backup that is marked as locked.');
    await deleteBackupRow(trx, row.id);
    await recordActivity(trx, {
      serverId: server.id,
      event: 'server:backup.delete',
      actor,
      properties: { name: row.name, failed: row.is_successful !== 1 },
      timestamp: now,
    });
    await deps.daemon.deleteBackup(daemonServer(current), row.uuid);
  });
}

/** Toggles is_locked and logs `server:backup.lock` or `.unlock`. */
export async function toggleLock(
  deps: Pick<AppDeps, 'db' | 'clock'>,
  server: ServerRow,
  backup: BackupRow,
  actor: Actor,
): Promise<BackupRow> {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    // Under the server's lock, as a restore is accepted: a backup being restored keeps its lock state (docs/reference/backups-and-restores.md#durability).
    if (!(await lockServerRow(trx, server.id))) throw notFound();
    if ((await findRestoreOfServer(trx, server.id))?.backup_id === backup.id) throw conflict(RESTORING);
    const row = await toggleBackupLock(trx, backup.id);
    if (!row) throw notFound();
    await recordActivity(trx, {
      serverId: server.id,
      event: row.is_locked === 1 ? 'server:backup.lock' : 'server:backup.unlock',
      actor,
      properties: { name: row.name },
      timestamp: now,
    });
    return row;
  });
}

/** Thrown by importBackup for problems with the file itself. */
export class BackupImportError extends Error {}

/**
 * Registers an existing gzip tarball as a completed, successful backup of
 * `server` (the admin command). The file is copied beside the other archives
 * while its sha1 and size are computed; its contents are judged at restore
 * time. Counts toward the limit; logged as `server:backup.complete` (system).
 */
export async function importBackup(
  deps: Pick<AppDeps, 'db' | 'clock' | 'config'> & { daemon: AppDeps['daemon'] & { backupPath(uuid: string): string } },
  server: ServerRow,
  request: { file: string; name?: string | undefined },
): Promise<BackupRow> {
  let stat;
  try {
    stat = await fs.stat(request.file);
  } catch {
    throw new BackupImportError(`Cannot read ${request.file}.`);
  }
  if (!stat.isFile()) throw new BackupImportError(`${request.file} is not a regular file.`);

  // Refuse early, before copying anything; checked again under the lock below.
  if (server.backup_limit <= 0) throw forbidden(NOT_CAPABLE);

  const uuid = randomUUID();
  const finalPath = deps.daemon.backupPath(uuid);
  const partPath = `${finalPath}.part`;
  await fs.mkdir(path.dirname(finalPath), { recursive: true });
  const hash = createHash('sha1');
  let bytes = 0;
  try {
    await pipeline(
      createReadStream(request.file),
      new Transform({
        transform(chunk: Buffer, _encoding, done) {
          hash.update(chunk);
          bytes += chunk.length;
          done(null, chunk);
        },
      }),
      createWriteStream(partPath, { flags: 'wx', mode: 0o600 }),
    );
    const now = deps.clock.now();
    const name = request.name?.trim() || defaultBackupName(now, deps.config.timezone);
    return await deps.db.transaction().execute(async (trx) => {
      const current = await lockServerRow(trx, server.id);
      if (!current) throw notFound();
      await ensureRoomForBackup(deps, trx, current, false, now);
      const backup = await insertBackup(trx, {
        uuid,
        server_id: server.id,
        name,
        ignored_files: '[]',
        checksum: `sha1:${hash.digest('hex')}`,
        bytes,
        is_successful: 1,
        is_locked: 0,
        created_at: now,
        completed_at: now,
      });
      await recordActivity(trx, {
        serverId: server.id,
        event: 'server:backup.complete',
        actor: SYSTEM_ACTOR,
        properties: { name: backup.name },
        timestamp: now,
      });
      // Last, inside the transaction: the row never names a file that is not in place.
      await fs.rename(partPath, finalPath);
      return backup;
    });
  } catch (err) {
    await fs.rm(partPath, { force: true });
    throw err;
  }
}
