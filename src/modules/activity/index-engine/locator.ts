import type { DialectName, Queryable } from '../../../db/database.js';
import type { TermKindName } from '../activity.terms.js';
import type { Anchor } from './anchors.js';
import { COSTS, type Costs } from './costs.js';
import { countInRange, findSeqsInRange, gatherSeqs, rankAt } from './locator.queries.js';
import { findTermsNotContaining } from './terms.queries.js';
import type { Stream, TermFilter, TermRow } from './terms.js';

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
  /** false: neither use nor keep anchors learned by other listings (anchors.ts). */
  cache?: boolean;
}

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
export class PageLocator {
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

  /** Anchors found by this listing, for the next ones (anchors.ts). */
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
