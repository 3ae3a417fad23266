import type { Queryable } from '../../db/database.js';
import type { EggVariableRow } from '../../db/schema.js';

/** One of the egg's variables with the server's own value (null: the server has none, the default applies). */
export interface ServerEggVariable extends EggVariableRow {
  server_value: string | null;
}

/** The egg variables of many servers at once, each with the server's value (a page of the server list): two queries whatever their number. */
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
