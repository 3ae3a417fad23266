import type { Queryable } from '../../db/database.js';
import type { EggRow, EggVariableRow, NewEgg, NewEggVariable } from '../../db/schema.js';

/** One of a server's egg variables with its own value: `server_value` null when it has none (the default applies). */
export type ServerVariableValue = EggVariableRow & {
  server_value: string | null;
  /** What the server runs with: its own value, else the variable's default. */
  value: string;
};

export async function findEgg(db: Queryable, id: number): Promise<EggRow | undefined> {
  return db.selectFrom('eggs').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findEggByUuid(db: Queryable, uuid: string): Promise<EggRow | undefined> {
  return db.selectFrom('eggs').selectAll().where('uuid', '=', uuid).executeTakeFirst();
}

/** Every egg, oldest first. */
export async function listEggs(db: Queryable): Promise<EggRow[]> {
  return db.selectFrom('eggs').selectAll().orderBy('id').execute();
}

/** An egg's variables in the egg file's order. */
export async function listEggVariables(db: Queryable, eggId: number): Promise<EggVariableRow[]> {
  return db.selectFrom('egg_variables').selectAll().where('egg_id', '=', eggId).orderBy('sort').orderBy('id').execute();
}

/**
 * The variables of the server's egg, each with the server's value (or the
 * default when it has none); none for a server without an egg.
 */
export async function serverVariableValues(db: Queryable, serverId: number): Promise<ServerVariableValue[]> {
  const rows = await db
    .selectFrom('servers as s')
    .innerJoin('egg_variables as v', 'v.egg_id', 's.egg_id')
    .leftJoin('server_variables as sv', (join) => join.onRef('sv.variable_id', '=', 'v.id').onRef('sv.server_id', '=', 's.id'))
    .selectAll('v')
    .select('sv.variable_value as server_value')
    .where('s.id', '=', serverId)
    .orderBy('v.sort')
    .orderBy('v.id')
    .execute();
  return rows.map((row) => ({ ...row, value: row.server_value ?? row.default_value }));
}

/** Sets (inserts or replaces) a server's value of one variable. */
export async function setServerVariable(
  db: Queryable,
  serverId: number,
  variableId: number,
  value: string,
  now: number,
): Promise<void> {
  await db
    .insertInto('server_variables')
    .values({ server_id: serverId, variable_id: variableId, variable_value: value, created_at: now, updated_at: now })
    .onConflict((oc) => oc.columns(['server_id', 'variable_id']).doUpdateSet({ variable_value: value, updated_at: now }))
    .execute();
}

export async function insertEgg(db: Queryable, egg: NewEgg): Promise<number> {
  const row = await db.insertInto('eggs').values(egg).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

/** Replaces an egg's own columns (a re-import of the same uuid); its id, uuid and created_at stay. */
export async function updateEgg(db: Queryable, id: number, egg: Omit<NewEgg, 'uuid' | 'created_at'>): Promise<void> {
  await db.updateTable('eggs').set(egg).where('id', '=', id).execute();
}

export async function insertEggVariable(db: Queryable, variable: NewEggVariable): Promise<void> {
  await db.insertInto('egg_variables').values(variable).execute();
}

/** Replaces a variable's columns (matched by env_variable on re-import): servers' values of it stay. */
export async function updateEggVariable(
  db: Queryable,
  id: number,
  variable: Omit<NewEggVariable, 'egg_id' | 'env_variable' | 'created_at'>,
): Promise<void> {
  await db.updateTable('egg_variables').set(variable).where('id', '=', id).execute();
}

/** Deletes variables a re-imported egg no longer has (servers' values of them go with them: ON DELETE CASCADE). */
export async function deleteEggVariables(db: Queryable, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await db.deleteFrom('egg_variables').where('id', 'in', ids).execute();
}
