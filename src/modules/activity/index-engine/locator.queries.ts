import { sql, type RawBuilder } from 'kysely';
import type { DialectName, Queryable } from '../../../db/database.js';
import { STREAM_COLUMNS, type TermKindName } from '../activity.terms.js';
import { and, filterConditions, idIn, num } from './sql-fragments.js';
import type { TermFilter, TermRow } from './terms.js';

/**
 * The page locator's SQL (locator.ts): ranks, counts and seq windows, each
 * read through one index — the server's seq index or a kind's stream index,
 * pinned where SQLite would pick another.
 */

/**
 * How many entries of these terms have `seq <= at`: per term, one index probe
 * reads the stream position of its last entry at or before `at`.
 */
export async function rankAt(
  db: Queryable,
  dialect: DialectName,
  kind: TermKindName,
  terms: readonly TermRow[],
  at: number,
): Promise<number> {
  if (terms.length === 0) return 0;
  const { term, seq } = STREAM_COLUMNS[kind];
  const result = await sql<{ position: number | string | null }>`
    select coalesce(sum(
      coalesce(
        (select ${sql.ref(`l.${seq}`)} from activity_logs l
          where ${sql.ref(`l.${term}`)} = t.id and l.seq <= ${at} order by l.seq desc limit 1),
        t.last_seq - t.total)
      - (t.last_seq - t.total)), 0) as position
    from activity_terms t where ${idIn(
      dialect,
      sql.ref('t.id'),
      terms.map((t) => t.id),
    )}
  `.execute(db);
  return num(result.rows[0]?.position);
}

/**
 * The seqs of matching entries in [from, to], in order, at most `limit`. `via`
 * names the index to read: a kind's stream index (its matching terms' ranges,
 * the other kinds checked on the way) or the server's seq index (every entry
 * of the range, each checked).
 */
export async function findSeqsInRange(
  db: Queryable,
  dialect: DialectName,
  serverId: number,
  filter: TermFilter,
  range: { from: number; to: number; ascending: boolean; limit: number; via: TermKindName | 'seq' },
): Promise<number[]> {
  const order = range.ascending ? sql`asc` : sql`desc`;
  const conditions = and(filterConditions(dialect, filter));
  const between = sql`l.seq between ${range.from} and ${range.to}`;
  let query: RawBuilder<{ seq: number | string }>;
  if (range.via === 'seq') {
    const pin = dialect === 'sqlite' ? sql`indexed by activity_logs_server_seq_unique` : sql``;
    query = sql`select l.seq from activity_logs l ${pin} where l.server_id = ${serverId} and ${between} and ${conditions} order by l.seq ${order} limit ${range.limit}`;
  } else {
    // Without server_id in the condition, the stream index is the only one that fits (term ids are per server).
    const pin = dialect === 'sqlite' ? sql`indexed by ${sql.raw(STREAM_COLUMNS[range.via].index)}` : sql``;
    query = sql`select l.seq from activity_logs l ${pin} where ${between} and ${conditions} order by l.seq ${order} limit ${range.limit}`;
  }
  const result = await query.execute(db);
  return result.rows.map((r) => num(r.seq));
}

/**
 * How many matching entries lie in [from, to]. Nothing is read in order, so a
 * kind's stream index serves however many terms match (one range per term);
 * `via` names the index, as for findSeqsInRange.
 */
export async function countInRange(
  db: Queryable,
  dialect: DialectName,
  serverId: number,
  filter: TermFilter,
  range: { from: number; to: number; via: TermKindName | 'seq' },
): Promise<number> {
  const conditions = and(filterConditions(dialect, filter));
  const between = sql`l.seq between ${range.from} and ${range.to}`;
  let query: RawBuilder<{ n: number | string }>;
  if (range.via === 'seq') {
    const pin = dialect === 'sqlite' ? sql`indexed by activity_logs_server_seq_unique` : sql``;
    query = sql`select count(*) as n from activity_logs l ${pin} where l.server_id = ${serverId} and ${between} and ${conditions}`;
  } else {
    const pin = dialect === 'sqlite' ? sql`indexed by ${sql.raw(STREAM_COLUMNS[range.via].index)}` : sql``;
    query = sql`select count(*) as n from activity_logs l ${pin} where ${between} and ${conditions}`;
  }
  const result = await query.execute(db);
  return num(result.rows[0]?.n);
}

/**
 * Matching seqs read through one kind's stream index (`drive`) and sorted: the
 * cost is the drive's entry count, whatever the page.
 */
export async function gatherSeqs(
  db: Queryable,
  dialect: DialectName,
  drive: TermKindName,
  filter: TermFilter,
  page: { ascending: boolean; limit: number; offset: number },
): Promise<number[]> {
  const rest: TermFilter = { ...filter };
  delete rest[drive];
  const order = page.ascending ? sql`asc` : sql`desc`;
  const driveCondition = idIn(dialect, sql.ref(`l.${STREAM_COLUMNS[drive].term}`), filter[drive] ?? []);
  const others = filterConditions(dialect, rest);
  let query: RawBuilder<{ seq: number | string }>;
  if (dialect === 'sqlite') {
    query = sql`
      select l.seq from activity_logs l indexed by ${sql.raw(STREAM_COLUMNS[drive].index)}
      where ${driveCondition} and ${and(others)}
      order by l.seq ${order} limit ${page.limit} offset ${page.offset}`;
  } else if (others.length === 0) {
    query = sql`select l.seq from activity_logs l where ${driveCondition} order by l.seq ${order} limit ${page.limit} offset ${page.offset}`;
  } else {
    // The drive's rows first, then the other kinds: PostgreSQL keeps to that order for a materialised CTE.
    query = sql`
      with l as materialized (select seq, event_term, ip_term, actor_term from activity_logs l where ${driveCondition})
      select l.seq from l where ${and(others)}
      order by l.seq ${order} limit ${page.limit} offset ${page.offset}`;
  }
  const result = await query.execute(db);
  return result.rows.map((r) => num(r.seq));
}
