import { sql } from 'kysely';
import { ARRAY_ROWS, precompiled, type DialectName, type Queryable } from '../../../db/database.js';
import type { ActivityListRow, ActivityPage } from '../activity.types.js';
import { num } from './sql-fragments.js';

/**
 * Reading entries with their actors: the unfiltered listing's page straight
 * from the server's counters (a seq range), or the entries a filtered page
 * located, by seq.
 */

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
): Promise<ActivityPage> {
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

/** The entries with these seqs, with their actors, in the order asked. */
export async function findEntriesBySeq(
  db: Queryable,
  serverId: number,
  seqs: readonly number[],
  ascending: boolean,
): Promise<ActivityListRow[]> {
  if (seqs.length === 0) return [];
  const result = await sql<ActivityListRow>`
    select ${selectEntryColumns()}
    from activity_logs l left join users u on u.id = l.actor_id
    where l.server_id = ${serverId} and l.seq in (${sql.join([...seqs])})
    order by l.seq ${ascending ? sql`asc` : sql`desc`}
  `.execute(db);
  return result.rows.map(normaliseEntry);
}
