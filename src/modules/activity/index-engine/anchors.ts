import type { TermFilter } from './terms.js';

/**
 * A known point of a filtered listing: `rank` matching entries have seq <= `seq`.
 *
 * Such a fact about a server's log outlives the request that learned it: new
 * entries only ever get seqs above every existing one, so the count at or
 * below `seq` stays true until pruning removes entries — which moves the log's
 * first seq. A later request may use an anchor while that first seq is the
 * same and the anchor lies within its own snapshot (seq <= its last seq).
 * Entries matching a filter are named by term ids, so a new term matching the
 * same substring gives a different key, never a wrong count.
 */
export interface Anchor {
  seq: number;
  rank: number;
}

const MAX_KEYS = 256;
const MAX_ANCHORS_PER_KEY = 48;

/**
 * Anchors learned by earlier listings, per server and filter, in this process:
 * paging on through a filtered listing starts from where the previous page
 * ended instead of from an end of the log. Also the count of a filter on
 * several kinds (a sum over facets), while the log has not moved. Least
 * recently used keys go first.
 */
export class AnchorCache {
  private readonly entries = new Map<string, { first: number; anchors: Anchor[]; total?: { last: number; count: number } }>();

  static key(serverId: number, filter: TermFilter): string {
    const parts = (Object.keys(filter) as (keyof TermFilter)[])
      .sort()
      .map((kind) => `${kind}:${[...(filter[kind] ?? [])].sort((a, b) => a - b).join(',')}`);
    return `${serverId}|${parts.join('|')}`;
  }

  /** The anchors usable in a snapshot whose live log is [first, last]. */
  get(key: string, first: number, last: number): Anchor[] {
    const entry = this.entries.get(key);
    if (!entry) return [];
    if (entry.first !== first) {
      this.entries.delete(key);
      return [];
    }
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.anchors.filter((a) => a.seq >= first - 1 && a.seq <= last);
  }

  /**
   * The number of matching entries, as counted by a listing of the same log: the
   * same first and last seq mean the same entries (a write moves one of them).
   */
  total(key: string, first: number, last: number): number | undefined {
    const entry = this.entries.get(key);
    return entry && entry.first === first && entry.total?.last === last ? entry.total.count : undefined;
  }

  setTotal(key: string, first: number, last: number, count: number) {
    let entry = this.entries.get(key);
    if (!entry || entry.first !== first) entry = { first, anchors: [] };
    entry.total = { last, count };
    this.remember(key, entry);
  }

  add(key: string, first: number, learned: Anchor[]) {
    if (learned.length === 0) return;
    let entry = this.entries.get(key);
    if (!entry || entry.first !== first) entry = { first, anchors: [] };
    const known = new Set(entry.anchors.map((a) => a.seq));
    for (const anchor of learned) if (!known.has(anchor.seq)) entry.anchors.push(anchor);
    // The oldest learned go first.
    if (entry.anchors.length > MAX_ANCHORS_PER_KEY) entry.anchors.splice(0, entry.anchors.length - MAX_ANCHORS_PER_KEY);
    this.remember(key, entry);
  }

  private remember(key: string, entry: { first: number; anchors: Anchor[]; total?: { last: number; count: number } }) {
    this.entries.delete(key);
    this.entries.set(key, entry);
    if (this.entries.size > MAX_KEYS) this.entries.delete(this.entries.keys().next().value!);
  }
}

const caches = new WeakMap<object, AnchorCache>();

/** One cache per database handle: tests open several in one process. */
export function anchorCacheFor(db: object): AnchorCache {
  let cache = caches.get(db);
  if (!cache) {
    cache = new AnchorCache();
    caches.set(db, cache);
  }
  return cache;
}
