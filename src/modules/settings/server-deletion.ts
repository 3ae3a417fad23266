import type { AppDeps } from '../../deps.js';
import type { Queryable } from '../../db/database.js';
import type { ServerRow } from '../../db/schema.js';
import { dropDatabasesOfServer } from '../databases/databases.service.js';
import { HostError } from '../databases/databases.engines.js';
import { daemonServer } from '../servers/servers.service.js';
import { deleteServerRow, findBackupUuidsOfServer, releaseAllocationsOfServer } from './settings.repository.js';

/** Why a server cannot be deleted now; the CLI says it as is. */
export class ServerDeletionRefused extends Error {}

/**
 * Deletes a server (server:delete). Refused while its process runs or its
 * install runs unless `force` (then the process is killed, the install
 * aborted), and always while a backup is being restored into it (that
 * restore owns the volume until it ends; a stuck one is cleared with
 * server:status --set none --force first).
 *
 * Order, and what a SIGKILL at each point leaves:
 * 0. each of its databases is dropped on its host, then its row deleted;
 *    killed here: the remaining rows are still there, a rerun drops them.
 * 1. one transaction deletes the row and, by the schema's cascades, its
 *    subusers, schedules and tasks, backup rows, variable values and
 *    activity log (entries, counters, terms); its allocations are freed (notes
 *    cleared). Killed before the commit: nothing changed.
 * 2. the daemon deletes each backup's archive. Killed here: the archives not
 *    yet deleted stay in DATA_DIR/backups, named by their backup's uuid, with
 *    no row (harmless; listed in docs/SETTINGS.md for an operator to remove).
 * 3. the daemon removes the volume and the logs (removeServerFiles): what a
 *    kill leaves there is finished by `server:delete` of the same full UUID,
 *    or swept at the next start.
 */
export async function deleteServer(
  deps: Pick<AppDeps, 'db' | 'daemon' | 'clock'> & { appKey: Buffer },
  server: ServerRow,
  options: { force: boolean },
): Promise<void> {
  const target = daemonServer(server);
  if (server.status === 'restoring_backup') {
    throw new ServerDeletionRefused('A backup is being restored into this server; delete it once the restore has ended.');
  }
  const running = (await deps.daemon.state(target)) !== 'offline';
  const installing = server.status === 'installing';
  if ((running || installing) && !options.force) {
    throw new ServerDeletionRefused(
      `The server is ${running ? 'running' : 'installing'}; stop it first (servers:stop) or pass --force to kill it.`,
    );
  }
  // 0. its databases on the database hosts (docs/DATABASES.md), as Pterodactyl's ServerDeletionService:
  //    a host that fails refuses the deletion unless `force` (then the rows go and the remote ones stay).
  try {
    await dropDatabasesOfServer(deps, server.id);
  } catch (error) {
    if (!(error instanceof HostError) || !options.force) {
      throw new ServerDeletionRefused(
        `A database of this server could not be dropped on its host (${error instanceof Error ? error.message : 'unknown error'}); pass --force to delete the server anyway.`,
      );
    }
  }
  if (installing) await deps.daemon.abortInstall(target);
  if (running) await deps.daemon.power(target, 'kill');
  const backups = await deps.db.transaction().execute((trx) => deleteServerRows(trx, server.id, deps.clock.now()));
  for (const uuid of backups) await deps.daemon.deleteBackup(target, uuid);
  await deps.daemon.removeServer(target);
}

/** Step 1: the row and everything that hangs off it; returns the uuids of the backups whose archives are to go. */
async function deleteServerRows(trx: Queryable, serverId: number, now: number): Promise<string[]> {
  const backups = await findBackupUuidsOfServer(trx, serverId);
  await releaseAllocationsOfServer(trx, serverId, now);
  await deleteServerRow(trx, serverId);
  return backups;
}
