import { sql } from 'kysely';
import { precompiled, type Queryable } from '../../db/database.js';

/**
 * The activity SQL that is neither the index engine's (index-engine/) nor the
 * recorder's (activity.entries.repository.ts): what the rendered-listing cache
 * checks a stored listing against, and the pruner's statements.
 */

const listingVersion = precompiled<{ last_seq: number | null; total: number | null; generation: number }>(
  (serverId) => sql`
    select a.last_seq, a.total, g.generation
    from change_generations g left join activity_servers a on a.server_id = ${serverId}
    where g.name = 'users'`,
  1,
);

/**
 * Everything a server's rendered listing depends on besides the request, as one
 * string: its entries (the counters change with every write and every prune,
 * in the writer's transaction; `last_seq` never goes back, so no pair of
 * counters comes round twice) and its actors' user rows (the users
 * generation, raised by trigger). Equal versions, equal listings. Undefined
 * when there is no telling.
 */
export async function findListingVersion(db: Queryable, serverId: number): Promise<string | undefined> {
  const row = (await listingVersion(db, [serverId])).rows[0];
  // Without its users row (removed by hand) nothing can tell a stale listing: none is cached.
  return row ? `${row.last_seq ?? '-'}/${row.total ?? '-'}/${row.generation}` : undefined;
}

/** Servers whose oldest live entry is older than the cutoff: one index probe each. */
export async function findServersWithEntriesBefore(db: Queryable, cutoff: number): Promise<number[]> {
  const servers = await sql<{ server_id: number }>`
    select s.server_id from activity_servers s
    join activity_logs l on l.server_id = s.server_id and l.seq = s.last_seq - s.total + 1
    where s.total > 0 and l.timestamp < ${cutoff}
    order by s.server_id
  `.execute(db);
  return servers.rows.map((row) => row.server_id);
}

/** Takes the server's counter row, every writer's lock for the server (see activity.recorder.ts), with a no-op update. */
export function lockServerCounter(db: Queryable, serverId: number) {
  return db
    .updateTable('activity_servers')
    .set((eb) => ({ last_seq: eb.ref('last_seq') }))
    .where('server_id', '=', serverId)
    .returning(['last_seq', 'total'])
    .executeTakeFirst();
}

/** Up to `limit` of the server's entries from `first` on, stamped before `cutoff`, in seq order. */
export function findOldestEntries(db: Queryable, serverId: number, first: number, limit: number, cutoff: number) {
  return db
    .selectFrom('activity_logs')
    .select(['seq', 'event_term', 'ip_term', 'actor_term', 'facet_id'])
    .where('server_id', '=', serverId)
    .where('seq', '>=', first)
    .where('seq', '<', first + limit)
    .where('timestamp', '<', cutoff)
    .orderBy('seq')
    .execute();
}

export async function deleteEntries(db: Queryable, serverId: number, fromSeq: number, toSeq: number): Promise<void> {
  await db
    .deleteFrom('activity_logs')
    .where('server_id', '=', serverId)
    .where('seq', '>=', fromSeq)
    .where('seq', '<=', toSeq)
    .execute();
}

export async function subtractFromServerTotal(db: Queryable, serverId: number, n: number): Promise<void> {
  await db
    .updateTable('activity_servers')
    .set((eb) => ({ total: eb('total', '-', n) }))
    .where('server_id', '=', serverId)
    .execute();
}

/** `total -= count` per id; rows left at zero go, so the vocabulary holds only live terms. */
export async function subtractTotals(db: Queryable, table: 'activity_terms' | 'activity_facets', counts: Map<number, number>) {
  const ids = [...counts.keys()];
  if (ids.length === 0) return;
  const byCount = sql.join(
    // Literals: the ids and counts are integers we computed, and PostgreSQL cannot type bare CASE parameters.
    [...counts].map(([id, count]) => sql`when ${sql.lit(id)} then ${sql.lit(count)}`),
    sql` `,
  );
  await sql`update ${sql.table(table)} set total = total - (case id ${byCount} end) where id in (${sql.join(ids)})`.execute(db);
  await sql`delete from ${sql.table(table)} where id in (${sql.join(ids)}) and total = 0`.execute(db);
}
