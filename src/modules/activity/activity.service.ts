import type { AppDeps } from '../../deps.js';
import type { DialectName, Queryable } from '../../db/database.js';
import {
  countFacets,
  countInRange,
  findEntriesBySeq,
  findSeqsInRange,
  findTermsNotContaining,
  findUnfilteredPage,
  gatherSeqs,
  rankAt,
  resolveFilter,
  type ActivityListRow,
  type TermFilter,
  type TermRow,
} from './activity.repository.js';
import { AnchorCache, anchorCacheFor, type Anchor } from './activity.anchors.js';
import { actorTerm, SYSTEM_TERM, type TermKindName } from './activity.terms.js';

/** A listing request, already validated (activity.schemas.ts). */
export interface ActivityListQuery {
  page: number;
  perPage: number;
  ascending: boolean;
  /** Substrings, as given (matched case-insensitively, literally). */
  event?: string;
  ip?: string;
  /** A user UUID (lower case) or 'system'. */
  actor?: string;
}

/** Who is reading: the IP rule of SPEC 2.3 and 3 depends on it. */
export interface ActivityViewer {
  userId: number;
  /** The server's owner or a root admin: sees every IP. */
  seesAllIps: boolean;
}

export interface ActivityPage {
  rows: ActivityListRow[];
  total: number;
}

/** `anchors`: the cache to learn from and teach (by default the one of `db`). */
type Deps = Pick<AppDeps, 'db' | 'dialect'> & { anchors?: AnchorCache };

/**
 * How a page is found, for tests and the benchmark: `force` takes one way
 * whatever it costs (a probe-only search still ends in a short scan), `via`
 * picks the index a scan reads, and the scan's window sizing can be made tight
 * so that its widening is exercised.
 */
export interface ListTuning {
  force?: 'scan' | 'gather' | 'probe';
  via?: 'seq' | 'stream';
  windowSlack?: number;
  /** false: neither use nor keep anchors learned by other listings (activity.anchors.ts). */
  cache?: boolean;
}

/**
 * One page of a server's activity log and the exact number of entries matching
 * (SPEC 3). Reads one snapshot, so the page and the total agree even while
 * entries are written or pruned. Given a transaction, reads in it.
 */
export async function listActivity(
  deps: Deps,
  serverId: number,
  viewer: ActivityViewer,
  query: ActivityListQuery,
  tuning: ListTuning = {},
): Promise<ActivityPage> {
  const offset = (query.page - 1) * query.perPage;
  const filtered = query.event !== undefined || query.ip !== undefined || query.actor !== undefined;
  // Unfiltered: one statement, hence one snapshot, whatever the page.
  if (!filtered) return findUnfilteredPage(deps.db, deps.dialect, serverId, { offset, perPage: query.perPage, ascending: query.ascending });
  const cache = tuning.cache === false ? undefined : (deps.anchors ?? anchorCacheFor(deps.db));
  const run = (trx: Queryable) => listInSnapshot(trx, deps.dialect, serverId, viewer, query, tuning, cache);
  if (deps.db.isTransaction) return run(deps.db);
  if (deps.dialect === 'postgres') {
    return deps.db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(run);
  }
  return deps.db.transaction().execute(run);
}

/** One kind's filter: its matching terms and their entry count. */
interface Stream {
  kind: TermKindName;
  terms: TermRow[];
  total: number;
  /** The lower-cased substring the terms were matched with (events and IPs). */
  needle?: string;
  /** How many terms of this kind the server has (events and IPs). */
  termCount?: number;
}

async function listInSnapshot(
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

/**
 * Rough costs (microseconds) that choose how to find a page, measured on the
 * benchmark machine (docs/PERFORMANCE.md); only their ratios matter.
 */
interface Costs {
  /** One statement's round trip. */
  statement: number;
  /** One index probe (a rank term, a stream range start). */
  seek: number;
  /** One entry of a seq range, tested against the filter (SQLite reads its terms from the table). */
  seqRow: number;
  /** One entry of a term's stream, from the index alone. */
  streamRow: number;
  /** Testing an entry's other terms, carried by the stream indexes (filters on several kinds). */
  residualRow: number;
  /** One entry read through a stream index and sorted. */
  gatherRow: number;
  /** One entry of a term's stream counted (not returned), its other terms checked. */
  countRow: number;
}
const COSTS: Record<DialectName, Costs> = {
  sqlite: { statement: 30, seek: 4, seqRow: 0.6, streamRow: 0.15, residualRow: 0.05, gatherRow: 0.3, countRow: 0.08 },
  postgres: { statement: 250, seek: 8, seqRow: 0.4, streamRow: 0.3, residualRow: 0.1, gatherRow: 0.6, countRow: 0.2 },
};
const MAX_PROBES = 10;
/** A kind's stream index is read term by term: for a few terms only. */
const STREAM_PATH_MAX_TERMS = 64;

type Path = TermKindName | 'seq';

/**
 * Finds the seqs of the matching entries ranked rLo..rHi (ascending, 1-based)
 * without reading the entries before them.
 *
 * Known points (seq, rank) — "anchors" — start at the two ends of the log. From
 * an anchor the page is reached by scanning, either the server's seq index or a
 * filtered kind's stream index, at a cost of the entries between them. When the
 * filter is on one kind, the rank of any seq is the sum of one index probe per
 * term (the entry's place in its term's stream), so anchors can be placed next
 * to the page by interpolation. On several kinds, a rank is counted from the
 * nearer anchor instead: still proportional to the distance, but counting an
 * unordered stream range reads far less than scanning in order, and through
 * whichever kind has the fewest entries however many terms it has; the scan is
 * then left only the interpolation's error. Reading every matching entry through the
 * smallest filter's stream index and sorting ("gather") is the third way, for
 * small results. Each step takes the cheapest estimate.
 */
class PageLocator {
  private readonly anchors: Anchor[];
  private readonly costs: Costs;
  private rankable?: { kind: TermKindName; terms: TermRow[]; complement: boolean };

  constructor(
    private readonly db: Queryable,
    private readonly dialect: DialectName,
    private readonly serverId: number,
    private readonly filter: TermFilter,
    private readonly log: { first: number; last: number; all: number },
    private readonly total: number,
    private readonly streams: Stream[],
    private readonly tuning: ListTuning,
    known: Anchor[],
  ) {
    this.costs = COSTS[dialect];
    this.anchors = [
      { seq: log.first - 1, rank: 0 },
      { seq: log.last, rank: total },
    ];
    for (const anchor of known) this.addAnchor(anchor);
    if (streams.length === 1) {
      const s = streams[0]!;
      this.rankable = { kind: s.kind, terms: s.terms, complement: false };
    }
  }

  async locate(rLo: number, rHi: number): Promise<number[]> {
    const n = rHi - rLo + 1;
    const drive = this.streams.reduce((a, b) => (b.total < a.total ? b : a));
    const gatherCost =
      this.costs.statement + drive.total * (this.costs.gatherRow + (this.streams.length > 1 ? this.costs.residualRow : 0));
    const gather = () =>
      gatherSeqs(this.db, this.dialect, drive.kind, this.filter, { ascending: true, limit: n, offset: rLo - 1 });
    const ideal = this.collectCost(n);
    const force = this.tuning.force;
    if (force === 'gather') return gather();

    if (this.rankable && (force === 'probe' || this.bestAnchor(rLo, rHi).cost > ideal + this.probeCost())) {
      // Ranking through the terms that do not match is cheaper when they are fewer:
      // rank(t) = (entries up to t) - rank of the others.
      const s = this.streams[0]!;
      const others = s.termCount === undefined ? Infinity : s.termCount - s.terms.length;
      if (s.needle !== undefined && others < s.terms.length / 2 && s.terms.length > 4) {
        const terms = await findTermsNotContaining(this.db, this.dialect, this.serverId, s.kind, s.needle);
        this.rankable = { kind: s.kind, terms, complement: true };
      }
    }
    if (force === 'scan') return this.scanFrom(this.bestAnchor(rLo, rHi).anchor, rLo, rHi);
    if (force === 'probe') {
      for (let probes = 0; ; probes++) {
        const at = this.nextProbe(rLo, probes);
        if (at === undefined) break;
        await this.rank(at);
      }
      return this.scanFrom(this.bestAnchor(rLo, rHi).anchor, rLo, rHi);
    }

    for (let probes = 0; ; probes++) {
      const best = this.bestAnchor(rLo, rHi);
      const at = probes < MAX_PROBES ? this.nextProbe(rLo, probes) : undefined;
      const probeCost = at === undefined ? Infinity : this.probeCost(at);
      if (gatherCost <= Math.min(best.cost, ideal + probeCost)) return gather();
      if (at === undefined || best.cost <= ideal + probeCost) return this.scanFrom(best.anchor, rLo, rHi);
      await this.rank(at);
    }
  }

  /**
   * What ranking `at` costs: for one kind, a probe per term wherever `at` is;
   * for several, counting from the nearer known point, so the cost grows with
   * the distance (without `at`: the cost of the first kind only).
   */
  private probeCost(at?: number): number {
    const c = this.costs;
    if (this.rankable) return c.statement + this.rankable.terms.length * c.seek;
    if (at === undefined) return Infinity;
    const { below, above } = this.around(at);
    return this.countPath(Math.min(at - below.seq, above.seq - at)).cost;
  }

  /** The cheapest index to count the matching entries among `span` consecutive seqs through. */
  private countPath(span: number): { path: Path; cost: number } {
    const c = this.costs;
    const bySeq: { path: Path; cost: number } = { path: 'seq', cost: c.statement + span * c.seqRow };
    if (this.tuning.via === 'seq') return bySeq;
    let best: { path: Path; cost: number } | undefined;
    for (const s of this.streams) {
      // Its entries among the span (as many as the log's average suggests), each counted from the index alone.
      const cost = c.statement + s.terms.length * c.seek + span * (s.total / this.log.all) * c.countRow;
      if (best === undefined || cost < best.cost) best = { path: s.kind, cost };
    }
    if (best === undefined || (this.tuning.via !== 'stream' && bySeq.cost < best.cost)) return bySeq;
    return best;
  }

  /** The known points nearest to `at`: below.seq <= at <= above.seq. */
  private around(at: number): { below: Anchor; above: Anchor } {
    let below = this.anchors[0]!;
    let above = this.anchors[this.anchors.length - 1]!;
    for (const a of this.anchors) {
      if (a.seq <= at) below = a;
      else {
        above = a;
        break;
      }
    }
    return { below, above };
  }

  /** Anchors found by this listing, for the next ones (activity.anchors.ts). */
  readonly learned: Anchor[] = [];

  learn(...anchors: Anchor[]) {
    for (const anchor of anchors) {
      if (anchor.seq < this.log.first - 1 || anchor.seq > this.log.last) continue;
      this.learned.push(anchor);
      this.addAnchor(anchor);
    }
  }

  private async rank(at: number): Promise<number> {
    let rank: number;
    if (this.rankable) {
      const r = this.rankable;
      const ranked = await rankAt(this.db, this.dialect, r.kind, r.terms, at);
      rank = r.complement ? at - (this.log.first - 1) - ranked : ranked;
    } else {
      // Several kinds have no rank per term: count the matches between `at` and the nearer known point.
      const { below, above } = this.around(at);
      const up = at - below.seq <= above.seq - at;
      const range = up ? { from: below.seq + 1, to: at } : { from: at + 1, to: above.seq };
      const via = this.countPath(range.to - range.from + 1).path;
      const counted = await countInRange(this.db, this.dialect, this.serverId, this.filter, { ...range, via });
      rank = up ? below.rank + counted : above.rank - counted;
    }
    this.learn({ seq: at, rank });
    return rank;
  }

  private addAnchor(anchor: Anchor) {
    const i = this.anchors.findIndex((a) => a.seq >= anchor.seq);
    if (i === -1) this.anchors.push(anchor);
    else if (this.anchors[i]!.seq !== anchor.seq) this.anchors.splice(i, 0, anchor);
  }

  /** The anchors either side of rank rLo: rank(lo) < rLo <= rank(hi). */
  private bracket(rLo: number): { lo: Anchor; hi: Anchor } {
    let lo = this.anchors[0]!;
    let hi = this.anchors[this.anchors.length - 1]!;
    for (const a of this.anchors) {
      if (a.rank < rLo && a.seq >= lo.seq) lo = a;
      if (a.rank >= rLo && a.seq <= hi.seq) hi = a;
    }
    return { lo, hi };
  }

  /** Matching entries per seq around the page. */
  private density(rLo: number): number {
    const { lo, hi } = this.bracket(rLo);
    const span = hi.seq - lo.seq;
    return span <= 0 ? 1 : Math.max((hi.rank - lo.rank) / span, 1 / span);
  }

  /** The index a scan passing over `matches` matching entries should read, and what that costs. */
  private bestPath(matches: number, density: number): { path: Path; cost: number } {
    const c = this.costs;
    let best: { path: Path; cost: number } = { path: 'seq', cost: c.statement + (matches / density) * c.seqRow };
    const residual = this.streams.length > 1 ? c.residualRow : 0;
    for (const s of this.streams) {
      if (s.terms.length > STREAM_PATH_MAX_TERMS) continue;
      // The kind's entries per matching entry, each read from its stream (and checked against the other kinds).
      const candidates = matches * (s.total / this.total);
      const cost = c.statement + s.terms.length * c.seek + candidates * (c.streamRow + residual);
      if (this.tuning.via === 'seq') continue;
      if (cost < best.cost || this.tuning.via === 'stream') best = { path: s.kind, cost };
    }
    return best;
  }

  private collectCost(matches: number, rLo = 1): number {
    return this.bestPath(matches, this.density(rLo)).cost;
  }

  /** The matching entries a scan from `anchor` steps over to collect the page, and its cost. */
  private anchorCost(anchor: Anchor, rLo: number, rHi: number): number {
    const n = rHi - rLo + 1;
    const matches = anchor.rank < rLo ? rLo - 1 - anchor.rank + n : anchor.rank >= rHi ? anchor.rank - rHi + n : n;
    // Inside the page: two short scans.
    const extra = anchor.rank >= rLo && anchor.rank < rHi ? this.costs.statement : 0;
    return this.collectCost(matches, rLo) + extra;
  }

  private bestAnchor(rLo: number, rHi: number): { anchor: Anchor; cost: number } {
    let best = { anchor: this.anchors[0]!, cost: Infinity };
    for (const anchor of this.anchors) {
      const cost = this.anchorCost(anchor, rLo, rHi);
      if (cost < best.cost) best = { anchor, cost };
    }
    return best;
  }

  private lastWidth = Infinity;

  /**
   * The next seq to rank: interpolated between the anchors bracketing the page's
   * first rank, aiming just before it; a bisection instead when the last probe
   * did not halve the bracket (a skewed log), so the search always converges.
   */
  private nextProbe(rLo: number, probes: number): number | undefined {
    const { lo, hi } = this.bracket(rLo);
    const width = hi.seq - lo.seq;
    if (width <= 1) return undefined;
    const bisect = probes > 0 && width > this.lastWidth / 2;
    this.lastWidth = width;
    const at = bisect
      ? Math.floor((lo.seq + hi.seq) / 2)
      : Math.round(lo.seq + ((rLo - 0.5 - lo.rank) / Math.max(1, hi.rank - lo.rank)) * width);
    return Math.min(hi.seq - 1, Math.max(lo.seq + 1, at));
  }

  /** Collects the page by scanning from an anchor. */
  private async scanFrom(anchor: Anchor, rLo: number, rHi: number): Promise<number[]> {
    const d = this.density(rLo);
    if (anchor.rank < rLo) return this.scan(anchor, true, rLo - 1 - anchor.rank, rHi - rLo + 1, d);
    if (anchor.rank >= rHi) return (await this.scan(anchor, false, anchor.rank - rHi, rHi - rLo + 1, d)).reverse();
    // The anchor sits inside the page: the part up to it, then the part after it.
    const before = (await this.scan(anchor, false, 0, anchor.rank - rLo + 1, d)).reverse();
    const after = await this.scan(anchor, true, 0, rHi - anchor.rank, d);
    return [...before, ...after];
  }

  /**
   * Reads matching seqs on from an anchor (ascending: after it; descending: at
   * and before it), skipping `skip` of them and keeping `need`, in seq windows
   * sized from the density, so that each statement reads about what it needs
   * whichever index it goes through. Every window read leaves an anchor.
   */
  private async scan(anchor: Anchor, ascending: boolean, skip: number, need: number, density: number): Promise<number[]> {
    const found: number[] = [];
    let remaining = skip + need;
    let pos = ascending ? anchor.seq + 1 : anchor.seq;
    // Ascending: matches at or before pos - 1; descending: matches at or before pos.
    let rank = anchor.rank;
    let growth = 1;
    const slack = this.tuning.windowSlack ?? 64;
    const via = this.bestPath(remaining, density).path;
    while (remaining > 0 && pos >= this.log.first && pos <= this.log.last) {
      const width = Math.max(1, Math.ceil(((remaining / density) * (slack > 0 ? 1.2 : 0.5) + slack) * growth));
      const range = ascending
        ? { from: pos, to: Math.min(this.log.last, pos + width - 1) }
        : { from: Math.max(this.log.first, pos - width + 1), to: pos };
      const limit = remaining;
      const seqs = await findSeqsInRange(this.db, this.dialect, this.serverId, this.filter, { ...range, ascending, limit, via });
      found.push(...seqs);
      remaining -= seqs.length;
      // Fewer than asked: the window was read to its end.
      const whole = seqs.length < limit;
      if (ascending) {
        if (seqs.length > 0) this.learn({ seq: seqs[seqs.length - 1]!, rank: rank + seqs.length });
        rank += seqs.length;
        if (whole) this.learn({ seq: range.to, rank });
        pos = range.to + 1;
      } else {
        if (seqs.length > 0) this.learn({ seq: seqs[seqs.length - 1]! - 1, rank: rank - seqs.length });
        rank -= seqs.length;
        if (whole) this.learn({ seq: range.from - 1, rank });
        pos = range.from - 1;
      }
      growth *= 2;
    }
    return found.slice(skip, skip + need);
  }
}
