import { sql, type RawBuilder } from 'kysely';
import { ARRAY_ROWS, precompiled, type DialectName, type Queryable } from '../../db/database.js';
import type { ActivityLogRow } from '../../db/schema.js';
import { STREAM_COLUMNS, TermKind, type TermKindName } from './activity.terms.js';

/**
 * The activity listing's SQL (SPEC 3, docs/PERFORMANCE.md). Every query reads
 * one server through an index: its counters, its vocabulary, a `seq` range, or
 * a term's stream around one position. Where the two databases differ (how a
 * long id list is passed, how a plan is pinned), both versions sit side by side.
 */

/** A vocabulary row: a term, its live entries, and the last place handed out in its stream. */
export interface TermRow {
  id: number;
  total: number;
  last_seq: number;
}

/** Which terms an entry must have, per kind (AND across kinds, OR within one). */
export type TermFilter = Partial<Record<TermKindName, number[]>>;

/** An entry as the listing reads it: its own columns and its actor's (null for the system). */
export interface ActivityListRow
  extends Pick<ActivityLogRow, 'id' | 'seq' | 'batch' | 'event' | 'ip' | 'description' | 'actor_id' | 'api_key_id' | 'properties' | 'timestamp'> {
  actor_uuid: string | null;
  actor_username: string | null;
  actor_email: string | null;
  actor_use_totp: number | null;
  actor_created_at: number | null;
}

/** Up to this many ids go inline as parameters; longer lists travel as one array parameter. */
const INLINE_IDS = 64;

function idIn(dialect: DialectName, column: RawBuilder<unknown>, ids: readonly number[]): RawBuilder<unknown> {
  if (ids.length <= INLINE_IDS) return sql`${column} in (${sql.join(ids)})`;
  return dialect === 'postgres'
    ? sql`${column} = any(${[...ids]}::int[])`
    : sql`${column} in (select value from json_each(${JSON.stringify(ids)}))`;
}

function filterConditions(dialect: DialectName, filter: TermFilter, alias = 'l'): RawBuilder<unknown>[] {
  const conditions: RawBuilder<unknown>[] = [];
  for (const kind of Object.keys(filter) as TermKindName[]) {
    const ids = filter[kind];
    if (ids) conditions.push(idIn(dialect, sql.ref(`${alias}.${STREAM_COLUMNS[kind].term}`), ids));
  }
  return conditions;
}

function and(conditions: RawBuilder<unknown>[]): RawBuilder<unknown> {
  return conditions.length === 0 ? sql`1 = 1` : sql.join(conditions, sql` and `);
}

const num = (value: unknown) => Number(value ?? 0);

// ---------------------------------------------------------------- the unfiltered listing

function selectEntryColumns() {
  return sql`
    l.id, l.seq, l.batch, l.event, l.ip, l.description, l.actor_id, l.api_key_id, l.properties, l.timestamp,
    u.uuid as actor_uuid, u.username as actor_username, u.email as actor_email,
    u.use_totp as actor_use_totp, u.created_at as actor_created_at
  `;
}

function normaliseEntry(r: ActivityListRow): ActivityListRow {
  return {
    id: num(r.id),
    seq: num(r.seq),
    batch: r.batch,
    event: r.event,
    ip: r.ip,
    description: r.description,
    actor_id: r.actor_id,
    api_key_id: r.api_key_id,
    properties: r.properties,
    timestamp: num(r.timestamp),
    actor_uuid: r.actor_uuid,
    actor_username: r.actor_username,
    actor_email: r.actor_email,
    actor_use_totp: r.actor_use_totp,
    actor_created_at: r.actor_created_at === null ? null : num(r.actor_created_at),
  };
}

type UnfilteredRow = ActivityListRow & { list_total: number | string };
/** The listing's columns, in this order: a SQLite row arrives as an array (ARRAY_ROWS). */
type UnfilteredArrayRow = [
  list_total: number,
  id: number | null,
  seq: number,
  batch: string | null,
  event: string,
  ip: string | null,
  description: string | null,
  actor_id: number | null,
  api_key_id: number | null,
  properties: string,
  timestamp: number,
  actor_uuid: string | null,
  actor_username: string | null,
  actor_email: string | null,
  actor_use_totp: number | null,
  actor_created_at: number | null,
];

/** The page's seq range; parameters: the offset, then the offset plus the page size. */
const pageRange = (ascending: boolean, offset: unknown, end: unknown) =>
  ascending
    ? sql`l.seq >= c.last_seq - c.total + 1 + ${offset} and l.seq <= c.last_seq - c.total + ${end}`
    : sql`l.seq <= c.last_seq - ${offset} and l.seq > c.last_seq - ${end} and l.seq > c.last_seq - c.total`;

// PostgreSQL cannot estimate a range computed from another row: the LIMIT tells it the page is
// small (else it may plan for a third of the table and even JIT-compile the statement).
function postgresPageQuery(ascending: boolean) {
  const order = ascending ? sql`asc` : sql`desc`;
  const range = (offset: unknown, end: unknown) => pageRange(ascending, offset, end);
  return precompiled<UnfilteredRow>(
    (offset, end, perPage, serverId) => sql`
          select c.total as list_total, ${selectEntryColumns()}
          from activity_servers c
          left join lateral (
            select * from activity_logs l where l.server_id = c.server_id and ${range(offset, end)} order by l.seq ${order} limit ${perPage}
          ) l on true
          left join users u on u.id = l.actor_id
          where c.server_id = ${serverId}
          order by l.seq ${order}
        `,
    4,
  );
}

function sqlitePageQuery(ascending: boolean) {
  const order = ascending ? sql`asc` : sql`desc`;
  const range = (offset: unknown, end: unknown) => pageRange(ascending, offset, end);
  return precompiled<UnfilteredArrayRow>(
    (offset, end, serverId) => sql`${sql.raw(ARRAY_ROWS)}
          select c.total as list_total, ${selectEntryColumns()}
          from activity_servers c
          left join activity_logs l on l.server_id = c.server_id and ${range(offset, end)}
          left join users u on u.id = l.actor_id
          where c.server_id = ${serverId}
          order by l.seq ${order}
        `,
    3,
  );
}
const UNFILTERED_PAGE = {
  sqlite: { asc: sqlitePageQuery(true), desc: sqlitePageQuery(false) },
  postgres: { asc: postgresPageQuery(true), desc: postgresPageQuery(false) },
};

/**
 * A page of the unfiltered listing and the server's entry count, in one
 * statement (so one snapshot): the counters give the page's seq range.
 */
export async function findUnfilteredPage(
  db: Queryable,
  dialect: DialectName,
  serverId: number,
  page: { offset: number; perPage: number; ascending: boolean },
): Promise<{ rows: ActivityListRow[]; total: number }> {
  const { offset, perPage, ascending } = page;
  const order = ascending ? 'asc' : 'desc';
  if (dialect === 'postgres') {
    const result = await UNFILTERED_PAGE.postgres[order](db, [offset, offset + perPage, perPage, serverId]);
    const total = num(result.rows[0]?.list_total);
    return { total, rows: result.rows.filter((r) => r.id !== null).map(normaliseEntry) };
  }
  const result = await UNFILTERED_PAGE.sqlite[order](db, [offset, offset + perPage, serverId]);
  const first = result.rows[0];
  const total = num(first?.[0]);
  const rows: ActivityListRow[] = [];
  for (const r of result.rows) {
    if (r[1] === null) continue;
    rows.push({
      id: num(r[1]),
      seq: num(r[2]),
      batch: r[3],
      event: r[4],
      ip: r[5],
      description: r[6],
      actor_id: r[7],
      api_key_id: r[8],
      properties: r[9],
      timestamp: num(r[10]),
      actor_uuid: r[11],
      actor_username: r[12],
      actor_email: r[13],
      actor_use_totp: r[14],
      actor_created_at: r[15] === null ? null : num(r[15]),
    });
  }
  return { total, rows };
}

const listingVersion = precompiled<{ last_seq: number | null; total: number | null; generation: number }>(
  (serverId) => sql`
    select a.last_seq, a.total, g.generation
    from change_generations g left join activity_servers a on a.server_id = ${serverId}
    where g.name = 'users'`,
  1,
);

/**
 * Everything a server's rendered listing depends on besides the request, as one
 * string: its entries (the counters change with every write and every prune,
 * in the writer's transaction; `last_seq` never goes back, so no pair of
 * counters comes round twice) and its actors' user rows (the users
 * generation, raised by trigger). Equal versions, equal listings. Undefined
 * when there is no telling.
 */
export async function findListingVersion(db: Queryable, serverId: number): Promise<string | undefined> {
  const row = (await listingVersion(db, [serverId])).rows[0];
  // Without its users row (removed by hand) nothing can tell a stale listing: none is cached.
  return row ? `${row.last_seq ?? '-'}/${row.total ?? '-'}/${row.generation}` : undefined;
}

// ---------------------------------------------------------------- resolving a filter

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
  if (ask.actorUuid !== undefined) actor.push(sql`term = (select cast(id as varchar(20)) from users where uuid = ${ask.actorUuid})`);
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

// ---------------------------------------------------------------- finding a page

/**
 * How many entries of these terms have `seq <= at`: per term, one index probe
 * reads the stream position of its last entry at or before `at`.
 */
export async function rankAt(db: Queryable, dialect: DialectName, kind: TermKindName, terms: readonly TermRow[], at: number): Promise<number> {
  if (terms.length === 0) return 0;
  const { term, seq } = STREAM_COLUMNS[kind];
  const result = await sql<{ position: number | string | null }>`
    select coalesce(sum(
      coalesce(
        (select ${sql.ref(`l.${seq}`)} from activity_logs l
          where ${sql.ref(`l.${term}`)} = t.id and l.seq <= ${at} order by l.seq desc limit 1),
        t.last_seq - t.total)
      - (t.last_seq - t.total)), 0) as position
    from activity_terms t where ${idIn(dialect, sql.ref('t.id'), terms.map((t) => t.id))}
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

/** The entries with these seqs, with their actors, in the order asked. */
export async function findEntriesBySeq(db: Queryable, serverId: number, seqs: readonly number[], ascending: boolean): Promise<ActivityListRow[]> {
  if (seqs.length === 0) return [];
  const result = await sql<ActivityListRow>`
    select ${selectEntryColumns()}
    from activity_logs l left join users u on u.id = l.actor_id
    where l.server_id = ${serverId} and l.seq in (${sql.join([...seqs])})
    order by l.seq ${ascending ? sql`asc` : sql`desc`}
  `.execute(db);
  return result.rows.map(normaliseEntry);
}
