import type { TermKindName } from '../activity.terms.js';

/** A vocabulary row: a term, its live entries, and the last place handed out in its stream. */
export interface TermRow {
  id: number;
  total: number;
  last_seq: number;
}

/** Which terms an entry must have, per kind (AND across kinds, OR within one). */
export type TermFilter = Partial<Record<TermKindName, number[]>>;

/** One kind's filter: its matching terms and their entry count. */
export interface Stream {
  kind: TermKindName;
  terms: TermRow[];
  total: number;
  /** The lower-cased substring the terms were matched with (events and IPs). */
  needle?: string;
  /** How many terms of this kind the server has (events and IPs). */
  termCount?: number;
}
