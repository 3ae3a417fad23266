import { sql, type RawBuilder } from 'kysely';
import type { DialectName } from '../../../db/database.js';
import { STREAM_COLUMNS, type TermKindName } from '../activity.terms.js';
import type { TermFilter } from './terms.js';

/**
 * The pieces the engine's statements are built from: a term filter as SQL
 * conditions, and the numbers PostgreSQL returns as text read back as numbers.
 * Where the two databases differ (how a long id list is passed), both versions
 * sit side by side.
 */

/** Up to this many ids go inline as parameters; longer lists travel as one array parameter. */
const INLINE_IDS = 64;

export function idIn(dialect: DialectName, column: RawBuilder<unknown>, ids: readonly number[]): RawBuilder<unknown> {
  if (ids.length <= INLINE_IDS) return sql`${column} in (${sql.join(ids)})`;
  return dialect === 'postgres'
    ? sql`${column} = any(${[...ids]}::int[])`
    : sql`${column} in (select value from json_each(${JSON.stringify(ids)}))`;
}

export function filterConditions(dialect: DialectName, filter: TermFilter, alias = 'l'): RawBuilder<unknown>[] {
  const conditions: RawBuilder<unknown>[] = [];
  for (const kind of Object.keys(filter) as TermKindName[]) {
    const ids = filter[kind];
    if (ids) conditions.push(idIn(dialect, sql.ref(`${alias}.${STREAM_COLUMNS[kind].term}`), ids));
  }
  return conditions;
}

export function and(conditions: RawBuilder<unknown>[]): RawBuilder<unknown> {
  return conditions.length === 0 ? sql`1 = 1` : sql.join(conditions, sql` and `);
}

export const num = (value: unknown) => Number(value ?? 0);
