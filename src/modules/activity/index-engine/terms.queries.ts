import { sql, type RawBuilder } from 'kysely';
import type { DialectName, Queryable } from '../../../db/database.js';
import { TermKind, type TermKindName } from '../activity.terms.js';
import { and, filterConditions, num } from './sql-fragments.js';
import type { TermFilter, TermRow } from './terms.js';

/**
 * A filter's SQL against the server's vocabulary and facets: which terms match
 * a substring, and how many entries a filter on several kinds matches.
 */

/**
 * Case-insensitive substring match of a term: the lower-cased needle in the
 * lower-cased term (`folded`), taken literally (no wildcards).
 */
function containsLower(dialect: DialectName, needle: string): RawBuilder<unknown> {
  return dialect === 'postgres' ? sql`strpos(folded, ${needle}) > 0` : sql`instr(folded, ${needle}) > 0`;
}

export interface ResolvedFilter {
  counters: { lastSeq: number; total: number };
  /** Matching terms per kind asked for (an actor that is not found: an empty list). */
  terms: Partial<Record<TermKindName, TermRow[]>>;
  /** How many terms of that kind the server has (for substring kinds). */
  termCounts: Partial<Record<TermKindName, number>>;
}

/**
 * The server's counters and, per filtered kind, the terms that match: event and
 * IP substrings (already lower-cased) against the vocabulary, the actor by
 * term ('' for the system) or by user UUID. One statement, one snapshot.
 */
export async function resolveFilter(
  db: Queryable,
  dialect: DialectName,
  serverId: number,
  ask: { event?: string; ip?: string; actorTerm?: string; actorUuid?: string },
): Promise<ResolvedFilter> {
  // PostgreSQL: the statements after this one in the read transaction plan without JIT. Their
  // estimates over a million-entry server can pass jit_above_cost, and compiling would take
  // longer (10+ ms) than running them.
  const noJit = dialect === 'postgres' ? sql` and set_config('jit', 'off', true) is not null` : sql``;
  const parts: RawBuilder<unknown>[] = [
    sql`select 0 as part, 0 as id, total, last_seq from activity_servers where server_id = ${serverId}${noJit}`,
  ];
  const terms = (kind: TermKindName, condition: RawBuilder<unknown>) =>
    sql`select ${sql.lit(TermKind[kind])} as part, id, total, last_seq from activity_terms
        where server_id = ${serverId} and kind = ${sql.lit(TermKind[kind])} and ${condition}`;
  const count = (kind: TermKindName) =>
    sql`select ${sql.lit(10 + TermKind[kind])} as part, 0 as id, count(*) as total, 0 as last_seq from activity_terms
        where server_id = ${serverId} and kind = ${sql.lit(TermKind[kind])}`;
  for (const kind of ['event', 'ip'] as const) {
    const needle = ask[kind];
    if (needle === undefined) continue;
    parts.push(terms(kind, containsLower(dialect, needle)), count(kind));
  }
  // Both given: the user named by the UUID must be the one the term names (a subuser's IP filter).
  const actor: RawBuilder<unknown>[] = [];
  if (ask.actorTerm !== undefined) actor.push(sql`term = ${ask.actorTerm}`);
  if (ask.actorUuid !== undefined)
    actor.push(sql`term = (select cast(id as varchar(20)) from users where uuid = ${ask.actorUuid})`);
  if (actor.length > 0) parts.push(terms('actor', and(actor)));
  const result = await sql<{ part: number | string; id: number; total: number | string; last_seq: number | string }>`
    ${sql.join(parts, sql` union all `)}
  `.execute(db);

  const resolved: ResolvedFilter = { counters: { lastSeq: 0, total: 0 }, terms: {}, termCounts: {} };
  if (ask.event !== undefined) resolved.terms.event = [];
  if (ask.ip !== undefined) resolved.terms.ip = [];
  if (ask.actorTerm !== undefined || ask.actorUuid !== undefined) resolved.terms.actor = [];
  const kindOf = (code: number) => (Object.keys(TermKind) as TermKindName[]).find((k) => TermKind[k] === code)!;
  for (const row of result.rows) {
    const part = num(row.part);
    if (part === 0) resolved.counters = { lastSeq: num(row.last_seq), total: num(row.total) };
    else if (part > 10) resolved.termCounts[kindOf(part - 10)] = num(row.total);
    else resolved.terms[kindOf(part)]!.push({ id: num(row.id), total: num(row.total), last_seq: num(row.last_seq) });
  }
  return resolved;
}

/** The server's terms of one kind that do not contain `needle` (lower-cased). */
export async function findTermsNotContaining(
  db: Queryable,
  dialect: DialectName,
  serverId: number,
  kind: TermKindName,
  needle: string,
): Promise<TermRow[]> {
  const result = await sql<TermRow>`
    select id, total, last_seq from activity_terms
    where server_id = ${serverId} and kind = ${TermKind[kind]} and not (${containsLower(dialect, needle)})
  `.execute(db);
  return result.rows.map((r) => ({ id: num(r.id), total: num(r.total), last_seq: num(r.last_seq) }));
}

/** The exact number of entries matching terms of several kinds at once, from the facet counts. */
export async function countFacets(db: Queryable, dialect: DialectName, serverId: number, filter: TermFilter): Promise<number> {
  const result = await sql<{ total: number | string | null }>`
    select coalesce(sum(f.total), 0) as total from activity_facets f
    where f.server_id = ${serverId} and ${and(filterConditions(dialect, filter, 'f'))}
  `.execute(db);
  return num(result.rows[0]?.total);
}
