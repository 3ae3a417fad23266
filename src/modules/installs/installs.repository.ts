/** What installs write (docs/reference/eggs-and-installs.md): the server's status (the egg is read through the eggs module's repository). */
import type { Queryable } from '../../db/database.js';
import type { ServerRow, ServerStatus } from '../../db/schema.js';

/**
 * Marks the server `installing` when its status is one of `from` (null
 * included when listed): a conditional update, so that of two concurrent
 * claims exactly one wins. False when the status was something else.
 */
export async function claimServerForInstall(
  db: Queryable,
  serverId: number,
  from: readonly (ServerStatus | null)[],
  now: number,
): Promise<boolean> {
  const statuses = from.filter((status): status is ServerStatus => status !== null);
  const result = await db
    .updateTable('servers')
    .set({ status: 'installing', updated_at: now })
    .where('id', '=', serverId)
    .where((eb) =>
      eb.or([
        ...(from.includes(null) ? [eb('status', 'is', null)] : []),
        ...(statuses.length > 0 ? [eb('status', 'in', statuses)] : []),
      ]),
    )
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Ends an install: `installing` becomes `status` (a status changed meanwhile, e.g. a suspension, is left alone). */
export async function finishInstallStatus(
  db: Queryable,
  serverId: number,
  status: ServerStatus | null,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('servers')
    .set({ status, updated_at: now })
    .where('id', '=', serverId)
    .where('status', '=', 'installing')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Servers marked `installing` (recovery at start). */
export async function findInstallingServers(db: Queryable): Promise<ServerRow[]> {
  return db.selectFrom('servers').selectAll().where('status', '=', 'installing').orderBy('id').execute();
}
