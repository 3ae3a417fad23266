import type { Queryable } from '../../db/database.js';
import type { NewActivityLog } from '../../db/schema.js';
import type { Actor } from '../../actor.js';
import { actorTerm, ipTerm, TermKind } from './activity.terms.js';
import {
  addToFacetCounts,
  addToServerCounters,
  addToTermCounts,
  insertEntries,
  lockServerCounters,
  setServerCounters,
} from './activity.entries.repository.js';

export type { Actor };

export const SYSTEM_ACTOR: Actor = Object.freeze({ userId: null, apiKeyId: null, ip: null });

export interface ActivityEntry {
  serverId: number;
  event: string;
  actor: Actor;
  properties?: Record<string, unknown>;
  description?: string | null;
  batch?: string | null;
  timestamp: number;
}

/**
 * Writes one activity entry. Call it with the transaction that makes the change it
 * records, so that the two commit together or not at all (docs/reference/activity.md#entries). Called with
 * the database itself, it opens a transaction of its own.
 *
 * Make it the last write of the transaction: it locks the server's activity
 * counter row until commit (PostgreSQL), so a lock taken after it could wait on
 * a transaction that waits for this counter.
 */
export async function recordActivity(db: Queryable, entry: ActivityEntry): Promise<void> {
  await recordActivities(db, [entry]);
}

/**
 * Writes several entries (any servers) with a constant number of statements.
 * Each entry gets the next `seq` of its server, its term ids and its place in
 * each term's stream; the server's counters, its terms' and facets' totals move
 * in the same transaction. Entries of one server keep the order given.
 *
 * Timestamps never decrease within a server: an entry stamped earlier than the
 * entry before it (two transactions racing, a clock stepping back) is stored
 * with the previous entry's timestamp, so that `seq` order is timestamp order.
 */
export async function recordActivities(db: Queryable, entries: readonly ActivityEntry[]): Promise<void> {
  if (entries.length === 0) return;
  if (db.isTransaction) {
    await writeEntries(db, entries);
    return;
  }
  await db.transaction().execute((trx) => writeEntries(trx, entries));
}

const CHUNK = 500;

function chunks<T>(items: T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

interface TermCount {
  serverId: number;
  kind: number;
  term: string;
  n: number;
  /** The stream position of the next entry of this term in the batch, once known. */
  next: number;
  id: number;
}

async function writeEntries(db: Queryable, input: readonly ActivityEntry[]): Promise<void> {
  // Servers in ascending id order: concurrent writers lock counter rows in one order, so never in a cycle.
  const entries = input
    .map((entry, index) => ({ entry, index }))
    .sort((a, b) => a.entry.serverId - b.entry.serverId || a.index - b.index)
    .map((x) => x.entry);
  const serverIds = [...new Set(entries.map((e) => e.serverId))];

  // Each server's counter row, created if missing and locked until commit. When every entry of a
  // server in this batch has one timestamp (a single entry, a scheduler claim), one statement
  // moves the counters and reads where they were; otherwise the clamping needs the previous
  // timestamp first, and the counters move at the end.
  const timestamps = new Map<number, Set<number>>();
  for (const e of entries) timestamps.set(e.serverId, (timestamps.get(e.serverId) ?? new Set()).add(e.timestamp));
  const uniform = [...timestamps.values()].every((set) => set.size === 1);
  const counts = new Map<number, number>();
  for (const e of entries) counts.set(e.serverId, (counts.get(e.serverId) ?? 0) + 1);
  const counters = new Map<number, { lastSeq: number; total: number; lastTimestamp: number }>();
  for (const ids of chunks(serverIds)) {
    const rows = uniform
      ? await addToServerCounters(
          db,
          ids.map((id) => ({
            server_id: id,
            last_seq: counts.get(id)!,
            total: counts.get(id)!,
            last_timestamp: [...timestamps.get(id)!][0]!,
          })),
        )
      : await lockServerCounters(db, ids);
    for (const row of rows) {
      // Uniform: the values after this batch; step back to where it starts (its timestamp, clamped, is final).
      const n = uniform ? counts.get(row.server_id)! : 0;
      counters.set(row.server_id, {
        lastSeq: Number(row.last_seq) - n,
        total: Number(row.total) - n,
        lastTimestamp: Number(row.last_timestamp),
      });
    }
  }

  // Count each term's entries in this batch, then add them to the vocabulary in one statement.
  const terms = new Map<string, TermCount>();
  const termOf = (serverId: number, kind: number, term: string) => {
    const key = `${serverId}|${kind}|${term}`;
    let count = terms.get(key);
    if (!count) {
      count = { serverId, kind, term, n: 0, next: 0, id: 0 };
      terms.set(key, count);
    }
    return count;
  };
  const perEntry = entries.map((e) => {
    const event = termOf(e.serverId, TermKind.event, e.event);
    const ip = termOf(e.serverId, TermKind.ip, ipTerm(e.actor.ip));
    const actor = termOf(e.serverId, TermKind.actor, actorTerm(e.actor.userId));
    event.n += 1;
    ip.n += 1;
    actor.n += 1;
    return { event, ip, actor };
  });
  for (const batch of chunks([...terms.values()])) {
    const rows = await addToTermCounts(
      db,
      batch.map((t) => ({
        server_id: t.serverId,
        kind: t.kind,
        term: t.term,
        folded: t.term.toLowerCase(),
        last_seq: t.n,
        total: t.n,
      })),
    );
    for (const row of rows) {
      const count = terms.get(`${row.server_id}|${row.kind}|${row.term}`)!;
      count.id = row.id;
      count.next = Number(row.last_seq) - count.n + 1;
    }
  }

  const facets = new Map<string, { serverId: number; event: number; ip: number; actor: number; n: number; id: number }>();
  const pending = entries.map((e, i) => {
    const { event, ip, actor } = perEntry[i]!;
    const counter = counters.get(e.serverId)!;
    counter.lastSeq += 1;
    counter.total += 1;
    counter.lastTimestamp = Math.max(counter.lastTimestamp, e.timestamp);
    const facetKey = `${e.serverId}|${event.id}|${ip.id}|${actor.id}`;
    const facet = facets.get(facetKey) ?? { serverId: e.serverId, event: event.id, ip: ip.id, actor: actor.id, n: 0, id: 0 };
    facet.n += 1;
    facets.set(facetKey, facet);
    return {
      facet,
      server_id: e.serverId,
      event: e.event,
      actor_id: e.actor.userId,
      api_key_id: e.actor.apiKeyId,
      ip: e.actor.ip,
      properties: JSON.stringify(e.properties ?? {}),
      description: e.description ?? null,
      batch: e.batch ?? null,
      timestamp: counter.lastTimestamp,
      seq: counter.lastSeq,
      event_term: event.id,
      event_seq: event.next++,
      ip_term: ip.id,
      ip_seq: ip.next++,
      actor_term: actor.id,
      actor_seq: actor.next++,
    };
  });

  for (const batch of chunks([...facets.values()])) {
    const returned = await addToFacetCounts(
      db,
      batch.map((f) => ({ server_id: f.serverId, event_term: f.event, ip_term: f.ip, actor_term: f.actor, total: f.n })),
    );
    for (const row of returned) facets.get(`${row.server_id}|${row.event_term}|${row.ip_term}|${row.actor_term}`)!.id = row.id;
  }
  const rows: NewActivityLog[] = pending.map(({ facet, ...row }) => ({ ...row, facet_id: facet.id }));
  for (const batch of chunks(rows)) await insertEntries(db, batch);
  if (uniform) return;
  for (const ids of chunks(serverIds)) {
    await setServerCounters(
      db,
      ids.map((id) => {
        const c = counters.get(id)!;
        return { server_id: id, last_seq: c.lastSeq, total: c.total, last_timestamp: c.lastTimestamp };
      }),
    );
  }
}
