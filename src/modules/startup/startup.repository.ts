import type { Queryable } from '../../db/database.js';
import type { EggRow, EggVariableRow } from '../../db/schema.js';

/** One of the egg's variables with the server's own value (null: the server has none, the default applies). */
export interface ServerEggVariable extends EggVariableRow {
  server_value: string | null;
}

export async function findEgg(db: Queryable, eggId: number): Promise<EggRow | undefined> {
  return db.selectFrom('eggs').selectAll().where('id', '=', eggId).executeTakeFirst();
}

/** Every variable of the server's egg, in the egg's order, with the server's values. */
export async function findServerEggVariables(db: Queryable, serverId: number, eggId: number): Promise<ServerEggVariable[]> {
  const variables = await db
    .selectFrom('egg_variables')
    .selectAll()
    .where('egg_id', '=', eggId)
    .orderBy('sort')
    .orderBy('id')
    .execute();
  if (variables.length === 0) return [];
  const values = await db
    .selectFrom('server_variables')
    .select(['variable_id', 'variable_value'])
    .where('server_id', '=', serverId)
    .where(
      'variable_id',
      'in',
      variables.map((variable) => variable.id),
    )
    .execute();
  const byVariable = new Map(values.map((row) => [row.variable_id, row.variable_value]));
  return variables.map((variable) => ({ ...variable, server_value: byVariable.get(variable.id) ?? null }));
}

/** Sets the server's value of one variable (one row per server and variable: an upsert, safe against a concurrent first write). */
export async function upsertServerVariable(
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

/** The same for many servers at once (a page of the server list): two queries whatever their number. */
export async function findEggVariablesOfServers(
  db: Queryable,
  servers: readonly { id: number; egg_id: number | null }[],
): Promise<Map<number, ServerEggVariable[]>> {
  const result = new Map<number, ServerEggVariable[]>();
  const eggIds = [...new Set(servers.flatMap((server) => (server.egg_id === null ? [] : [server.egg_id])))];
  if (eggIds.length === 0) return result;
  const variables = await db
    .selectFrom('egg_variables')
    .selectAll()
    .where('egg_id', 'in', eggIds)
    .orderBy('sort')
    .orderBy('id')
    .execute();
  const values = await db
    .selectFrom('server_variables')
    .select(['server_id', 'variable_id', 'variable_value'])
    .where(
      'server_id',
      'in',
      servers.map((server) => server.id),
    )
    .execute();
  const valueOf = new Map(values.map((row) => [`${row.server_id}:${row.variable_id}`, row.variable_value]));
  for (const server of servers) {
    if (server.egg_id === null) continue;
    result.set(
      server.id,
      variables
        .filter((variable) => variable.egg_id === server.egg_id)
        .map((variable) => ({ ...variable, server_value: valueOf.get(`${server.id}:${variable.id}`) ?? null })),
    );
  }
  return result;
}
