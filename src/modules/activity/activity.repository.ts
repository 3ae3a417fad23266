import { sql } from 'kysely';
import { precompiled, type Queryable } from '../../db/database.js';

/**
 * The activity SQL that is not the index engine's (index-engine/): what the
 * rendered-listing cache checks a stored listing against.
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
