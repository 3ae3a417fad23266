import { sql } from 'kysely';
import type { Queryable } from '../../db/database.js';
import type { NewActivityLog } from '../../db/schema.js';

/**
 * The recorder's SQL (activity.recorder.ts decides what to write): each
 * statement takes one batch of rows and moves counters with an upsert, so a
 * batch of entries costs a constant number of statements.
 */

interface ServerCounters {
  server_id: number;
  last_seq: number;
  total: number;
  last_timestamp: number;
}

/** Adds each row's counts to its server's counters (created if missing), locking them until commit; returns the new values. */
export function addToServerCounters(db: Queryable, rows: ServerCounters[]) {
  return db
    .insertInto('activity_servers')
    .values(rows)
    .onConflict((oc) =>
      oc.column('server_id').doUpdateSet((eb) => ({
        last_seq: eb('activity_servers.last_seq', '+', eb.ref('excluded.last_seq')),
        total: eb('activity_servers.total', '+', eb.ref('excluded.total')),
        last_timestamp: sql<number>`case when activity_servers.last_timestamp > excluded.last_timestamp
                then activity_servers.last_timestamp else excluded.last_timestamp end`,
      })),
    )
    .returning(['server_id', 'last_seq', 'total', 'last_timestamp'])
    .execute();
}

/** Locks the servers' counters until commit (creating missing ones at zero) and returns them unchanged. */
export function lockServerCounters(db: Queryable, serverIds: number[]) {
  return db
    .insertInto('activity_servers')
    .values(serverIds.map((id) => ({ server_id: id, last_seq: 0, total: 0, last_timestamp: 0 })))
    .onConflict((oc) => oc.column('server_id').doUpdateSet((eb) => ({ last_seq: eb.ref('activity_servers.last_seq') })))
    .returning(['server_id', 'last_seq', 'total', 'last_timestamp'])
    .execute();
}

/** Sets the servers' counters to the values given. */
export async function setServerCounters(db: Queryable, rows: ServerCounters[]): Promise<void> {
  await db
    .insertInto('activity_servers')
    .values(rows)
    .onConflict((oc) =>
      oc.column('server_id').doUpdateSet((eb) => ({
        last_seq: eb.ref('excluded.last_seq'),
        total: eb.ref('excluded.total'),
        last_timestamp: eb.ref('excluded.last_timestamp'),
      })),
    )
    .execute();
}

/** Adds terms to the vocabulary, or their counts to terms already there; returns each term's id and new last_seq. */
export function addToTermCounts(
  db: Queryable,
  rows: { server_id: number; kind: number; term: string; folded: string; last_seq: number; total: number }[],
) {
  return db
    .insertInto('activity_terms')
    .values(rows)
    .onConflict((oc) =>
      oc.columns(['server_id', 'kind', 'term']).doUpdateSet((eb) => ({
        last_seq: eb('activity_terms.last_seq', '+', eb.ref('excluded.last_seq')),
        total: eb('activity_terms.total', '+', eb.ref('excluded.total')),
      })),
    )
    .returning(['id', 'server_id', 'kind', 'term', 'last_seq'])
    .execute();
}

/** Adds facets (event, ip, actor combinations), or their counts to those already there; returns their ids. */
export function addToFacetCounts(
  db: Queryable,
  rows: { server_id: number; event_term: number; ip_term: number; actor_term: number; total: number }[],
) {
  return db
    .insertInto('activity_facets')
    .values(rows)
    .onConflict((oc) =>
      oc
        .columns(['server_id', 'event_term', 'ip_term', 'actor_term'])
        .doUpdateSet((eb) => ({ total: eb('activity_facets.total', '+', eb.ref('excluded.total')) })),
    )
    .returning(['id', 'server_id', 'event_term', 'ip_term', 'actor_term'])
    .execute();
}

export async function insertEntries(db: Queryable, rows: NewActivityLog[]): Promise<void> {
  await db.insertInto('activity_logs').values(rows).execute();
}
