import type { Database, DialectName, Queryable } from '../../../db/database.js';
import type { ActivityListQuery, ActivityPage, ActivityViewer } from '../activity.types.js';
import { actorTerm, SYSTEM_TERM } from '../activity.terms.js';
import { AnchorCache, anchorCacheFor } from './anchors.js';
import { findEntriesBySeq, findUnfilteredPage } from './entries.queries.js';
import { PageLocator, type ListTuning } from './locator.js';
import { countFacets, resolveFilter } from './terms.queries.js';
import type { Stream, TermFilter } from './terms.js';

export type { ListTuning } from './locator.js';

/**
 * The index engine's one entry point (docs/PERFORMANCE.md). Every statement
 * below reads one server through an index: its counters, its vocabulary, a
 * `seq` range, or a term's stream around one position.
 *
 *   findPage            unfiltered: one statement (entries.queries.ts)
 *   └ findFilteredPage  the filter's terms and total (terms.queries.ts),
 *                       the page's seqs (locator.ts → locator.queries.ts,
 *                       anchors.ts), its entries (entries.queries.ts)
 */

/** `db`: the database or a transaction; `anchors`: the cache to learn from and teach (by default the one of `db`). */
export interface EngineDeps {
  db: Database;
  dialect: DialectName;
  anchors?: AnchorCache;
}

/**
 * One page of a server's activity log and the exact number of entries matching
 * (docs/reference/activity.md#listing). Reads one snapshot, so the page and the total agree even while
 * entries are written or pruned. Given a transaction, reads in it.
 */
export async function findPage(
  deps: EngineDeps,
  serverId: number,
  viewer: ActivityViewer,
  query: ActivityListQuery,
  tuning: ListTuning = {},
): Promise<ActivityPage> {
  const offset = (query.page - 1) * query.perPage;
  const filtered = query.event !== undefined || query.ip !== undefined || query.actor !== undefined;
  // Unfiltered: one statement, hence one snapshot, whatever the page.
  if (!filtered)
    return findUnfilteredPage(deps.db, deps.dialect, serverId, { offset, perPage: query.perPage, ascending: query.ascending });
  const cache = tuning.cache === false ? undefined : (deps.anchors ?? anchorCacheFor(deps.db));
  const run = (trx: Queryable) => findFilteredPage(trx, deps.dialect, serverId, viewer, query, tuning, cache);
  if (deps.db.isTransaction) return run(deps.db);
  if (deps.dialect === 'postgres') {
    return deps.db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(run);
  }
  return deps.db.transaction().execute(run);
}

async function findFilteredPage(
  db: Queryable,
  dialect: DialectName,
  serverId: number,
  viewer: ActivityViewer,
  query: ActivityListQuery,
  tuning: ListTuning,
  cache: AnchorCache | undefined,
): Promise<ActivityPage> {
  const empty = (total: number): ActivityPage => ({ rows: [], total });

  // The actor: asked for, and/or implied by an IP filter from someone who sees only their own IPs.
  let actorTermAsked: string | undefined;
  let actorUuid: string | undefined;
  if (query.actor === 'system') actorTermAsked = SYSTEM_TERM;
  else if (query.actor !== undefined) actorUuid = query.actor;
  if (query.ip !== undefined && !viewer.seesAllIps) {
    // Others' entries (and the system's) never match: their IP is hidden from this viewer.
    if (actorTermAsked !== undefined) return empty(0);
    actorTermAsked = actorTerm(viewer.userId);
  }
  const needles = { event: query.event?.toLowerCase(), ip: query.ip?.toLowerCase() };
  const resolved = await resolveFilter(db, dialect, serverId, {
    ...(needles.event !== undefined ? { event: needles.event } : {}),
    ...(needles.ip !== undefined ? { ip: needles.ip } : {}),
    ...(actorTermAsked !== undefined ? { actorTerm: actorTermAsked } : {}),
    ...(actorUuid !== undefined ? { actorUuid } : {}),
  });
  const all = resolved.counters.total;
  if (all === 0) return empty(0);
  const streams: Stream[] = [];
  for (const kind of ['actor', 'event', 'ip'] as const) {
    const terms = resolved.terms[kind];
    if (terms === undefined) continue;
    const total = terms.reduce((sum, t) => sum + t.total, 0);
    if (total === 0) return empty(0);
    const needle = kind === 'actor' ? undefined : needles[kind];
    streams.push({
      kind,
      terms,
      total,
      ...(needle !== undefined ? { needle } : {}),
      ...(resolved.termCounts[kind] !== undefined ? { termCount: resolved.termCounts[kind] } : {}),
    });
  }
  // A filter every entry passes (`server:` on events) filters nothing.
  const active = streams.filter((s) => s.total < all);
  const filter: TermFilter = {};
  for (const s of active) filter[s.kind] = s.terms.map((t) => t.id);

  const first = resolved.counters.lastSeq - all + 1;
  const last = resolved.counters.lastSeq;
  const key = AnchorCache.key(serverId, filter);
  let total = active.length === 0 ? all : active.length === 1 ? active[0]!.total : cache?.total(key, first, last);
  if (total === undefined) {
    total = await countFacets(db, dialect, serverId, filter);
    cache?.setTotal(key, first, last, total);
  }
  const offset = (query.page - 1) * query.perPage;
  if (offset >= total) return empty(total);
  const count = Math.min(query.perPage, total - offset);
  // The page as ranks in ascending order, 1-based.
  const rLo = query.ascending ? offset + 1 : total - offset - count + 1;
  const rHi = rLo + count - 1;

  let seqs: number[];
  if (active.length === 0) seqs = Array.from({ length: count }, (_, i) => first + rLo - 1 + i);
  else {
    const known = cache?.get(key, first, last) ?? [];
    const locator = new PageLocator(db, dialect, serverId, filter, { first, last, all }, total, active, tuning, known);
    seqs = await locator.locate(rLo, rHi);
    // The page's own ends are anchors for the pages either side of it.
    if (seqs.length === count) locator.learn({ seq: seqs[0]! - 1, rank: rLo - 1 }, { seq: seqs[count - 1]!, rank: rHi });
    cache?.add(key, first, locator.learned);
  }
  if (!query.ascending) seqs.reverse();
  const rows = await findEntriesBySeq(db, serverId, seqs, query.ascending);
  return { rows, total };
}
