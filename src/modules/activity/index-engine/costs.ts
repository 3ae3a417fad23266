import type { DialectName } from '../../../db/database.js';

/**
 * Rough costs (microseconds) that choose how to find a page, measured on the
 * benchmark machine (docs/PERFORMANCE.md); only their ratios matter.
 */
export interface Costs {
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
export const COSTS: Record<DialectName, Costs> = {
  sqlite: { statement: 30, seek: 4, seqRow: 0.6, streamRow: 0.15, residualRow: 0.05, gatherRow: 0.3, countRow: 0.08 },
  postgres: { statement: 250, seek: 8, seqRow: 0.4, streamRow: 0.3, residualRow: 0.1, gatherRow: 0.6, countRow: 0.2 },
};
