/** What installs read and write (SPEC 16): the egg's install script and variables, and the server's status. */
import type { Queryable } from '../../db/database.js';
import type { ServerRow, ServerStatus } from '../../db/schema.js';

export interface EggInstall {
  readonly startup: string;
  readonly script: string;
  readonly container: string;
  readonly entrypoint: string;
}

/** The egg's install script, or undefined when the egg is gone. */
export async function findEggInstall(db: Queryable, eggId: number): Promise<EggInstall | undefined> {
  const row = await db
    .selectFrom('eggs')
    .select(['startup', 'script_install', 'script_container', 'script_entrypoint'])
    .where('id', '=', eggId)
    .executeTakeFirst();
  return row
    ? { startup: row.startup, script: row.script_install, container: row.script_container, entrypoint: row.script_entrypoint }
    : undefined;
}

/** Each of the egg's variables with the server's value (its default when the server has none), in the egg's order. */
export async function findServerVariableValues(
  db: Queryable,
  serverId: number,
  eggId: number,
): Promise<{ env_variable: string; value: string }[]> {
  const rows = await db
    .selectFrom('egg_variables as v')
    .leftJoin('server_variables as s', (join) => join.onRef('s.variable_id', '=', 'v.id').on('s.server_id', '=', serverId))
    .select(['v.env_variable', 'v.default_value', 's.variable_value'])
    .where('v.egg_id', '=', eggId)
    .orderBy('v.sort')
    .orderBy('v.id')
    .execute();
  return rows.map((row) => ({ env_variable: row.env_variable, value: row.variable_value ?? row.default_value }));
}

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
