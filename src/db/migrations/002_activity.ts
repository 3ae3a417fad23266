import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * The activity log's listing structures (docs/reference/activity.md#listing, docs/PERFORMANCE.md).
 *
 * - `activity_logs.seq`: the entry's place in its server's log, 1, 2, 3, ...
 *   with no gaps between the oldest and the newest live entry (pruning removes
 *   a prefix). Timestamps never decrease along it, so `seq` order is the
 *   listing's order and page N of the unfiltered listing is a `seq` range.
 * - Terms: each server's vocabulary of event names, IPs ('' for none) and
 *   actors (the user id as text, '' for the system), with how many live
 *   entries use each (`total`) and the last per-term sequence number handed
 *   out (`last_seq`); `folded` is the term in lower case (JavaScript's
 *   toLowerCase, identical on both databases), what filters match against. Each entry carries, per kind, its term's id and its place
 *   in that term's stream (`event_seq`, `ip_seq`, `actor_seq`, again gapless).
 * - Facets: live entry counts per (event, ip, actor) term triple, so that a
 *   listing filtered on several kinds still has an exact total without
 *   counting rows. Each entry names its facet (`facet_id`), for the pruner.
 * - `activity_servers`: per server, the last `seq` and the number of live
 *   entries; the row is the lock every writer of that server's log takes.
 *
 * Every write goes through modules/activity/activity.recorder.ts, which keeps
 * all of this in the inserting transaction; the pruner keeps it when deleting.
 */
export const TERM_EVENT = 1;
export const TERM_IP = 2;
export const TERM_ACTOR = 3;

export function activityMigration(dialect: DialectName) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      const idColumn = (t: ReturnType<Kysely<any>['schema']['createTable']>) =>
        dialect === 'sqlite'
          ? t.addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
          : t.addColumn('id', 'serial', (c) => c.primaryKey());

      await db.schema
        .createTable('activity_servers')
        .addColumn('server_id', 'integer', (c) => c.primaryKey().references('servers.id').onDelete('cascade'))
        .addColumn('last_seq', 'bigint', (c) => c.notNull())
        .addColumn('total', 'bigint', (c) => c.notNull())
        .addColumn('last_timestamp', 'bigint', (c) => c.notNull())
        .execute();

      await idColumn(db.schema.createTable('activity_terms'))
        .addColumn('server_id', 'integer', (c) => c.notNull().references('servers.id').onDelete('cascade'))
        .addColumn('kind', 'integer', (c) => c.notNull())
        .addColumn('term', 'varchar(191)', (c) => c.notNull())
        .addColumn('folded', 'varchar(191)', (c) => c.notNull())
        .addColumn('last_seq', 'bigint', (c) => c.notNull())
        .addColumn('total', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('activity_terms_server_kind_term_unique', ['server_id', 'kind', 'term'])
        .execute();

      await idColumn(db.schema.createTable('activity_facets'))
        .addColumn('server_id', 'integer', (c) => c.notNull().references('servers.id').onDelete('cascade'))
        .addColumn('event_term', 'integer', (c) => c.notNull())
        .addColumn('ip_term', 'integer', (c) => c.notNull())
        .addColumn('actor_term', 'integer', (c) => c.notNull())
        .addColumn('total', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('activity_facets_unique', ['server_id', 'event_term', 'ip_term', 'actor_term'])
        .execute();

      // SQLite adds one column per ALTER TABLE.
      for (const column of ['seq', 'event_term', 'event_seq', 'ip_term', 'ip_seq', 'actor_term', 'actor_seq', 'facet_id']) {
        const type = column.endsWith('_seq') ? 'bigint' : 'integer';
        await db.schema
          .alterTable('activity_logs')
          .addColumn(column, type, (c) => c.notNull().defaultTo(0))
          .execute();
      }

      // The listing reads by seq and by term stream; these replace 001's timestamp indexes.
      await db.schema.dropIndex('activity_logs_server_timestamp_index').execute();
      await db.schema.dropIndex('activity_logs_server_actor_index').execute();

      await rebuildActivityIndex(db);
      await createActivityLogIndexes(db, dialect);
    },
  };
}

/**
 * The activity_logs indexes the listing needs (created after the backfill, and
 * by the benchmark after its bulk load). Each term stream index carries the
 * entry's other terms, so that a listing filtered on several kinds tests them
 * from the index alone; PostgreSQL's seq index carries them too (INCLUDE keeps
 * (server_id, seq) unique), SQLite has no INCLUDE and keeps its seq index lean.
 */
export async function createActivityLogIndexes(db: Kysely<any>, dialect: DialectName): Promise<void> {
  if (dialect === 'postgres') {
    await sql`create unique index activity_logs_server_seq_unique on activity_logs (server_id, seq) include (event_term, ip_term, actor_term)`.execute(
      db,
    );
    await sql`create index activity_logs_event_stream_index on activity_logs (event_term, seq) include (event_seq, ip_term, actor_term)`.execute(
      db,
    );
    await sql`create index activity_logs_ip_stream_index on activity_logs (ip_term, seq) include (ip_seq, event_term, actor_term)`.execute(
      db,
    );
    await sql`create index activity_logs_actor_stream_index on activity_logs (actor_term, seq) include (actor_seq, event_term, ip_term)`.execute(
      db,
    );
    return;
  }
  await db.schema
    .createIndex('activity_logs_server_seq_unique')
    .unique()
    .on('activity_logs')
    .columns(['server_id', 'seq'])
    .execute();
  // (term, seq) finds a term's entries around any position; the term's own sequence
  // number rides along so that a rank is read from the index alone.
  await db.schema
    .createIndex('activity_logs_event_stream_index')
    .on('activity_logs')
    .columns(['event_term', 'seq', 'event_seq', 'ip_term', 'actor_term'])
    .execute();
  await db.schema
    .createIndex('activity_logs_ip_stream_index')
    .on('activity_logs')
    .columns(['ip_term', 'seq', 'ip_seq', 'event_term', 'actor_term'])
    .execute();
  await db.schema
    .createIndex('activity_logs_actor_stream_index')
    .on('activity_logs')
    .columns(['actor_term', 'seq', 'actor_seq', 'event_term', 'ip_term'])
    .execute();
}

export async function dropActivityLogIndexes(db: Kysely<any>): Promise<void> {
  for (const name of [
    'activity_logs_server_seq_unique',
    'activity_logs_event_stream_index',
    'activity_logs_ip_stream_index',
    'activity_logs_actor_stream_index',
  ]) {
    await db.schema.dropIndex(name).ifExists().execute();
  }
}

/**
 * Derives every listing structure from the entries themselves: what the recorder
 * would have produced had it written them one by one in (timestamp, id) order.
 * Runs once over existing entries in this migration; the benchmark runs it after
 * bulk-loading its dataset. Expects empty terms, facets and counters.
 */
export async function rebuildActivityIndex(db: Kysely<any>): Promise<void> {
  const termSource = [
    [TERM_EVENT, sql`event`],
    [TERM_IP, sql`coalesce(ip, '')`],
    [TERM_ACTOR, sql`coalesce(cast(actor_id as varchar(20)), '')`],
  ] as const;
  for (const [kind, expr] of termSource) {
    await sql`
      insert into activity_terms (server_id, kind, term, folded, last_seq, total)
      select server_id, ${sql.lit(kind)}, ${expr}, ${expr}, count(*), count(*) from activity_logs group by server_id, ${expr}
    `.execute(db);
  }
  // Lower case as the recorder writes it (JavaScript's, not each database's own).
  const terms = await sql<{ id: number; term: string }>`select id, term from activity_terms`.execute(db);
  for (const t of terms.rows) {
    const folded = t.term.toLowerCase();
    if (folded !== t.term) await sql`update activity_terms set folded = ${folded} where id = ${t.id}`.execute(db);
  }
  await sql`
    update activity_logs set
      seq = r.seq, event_term = r.event_term, event_seq = r.event_seq,
      ip_term = r.ip_term, ip_seq = r.ip_seq, actor_term = r.actor_term, actor_seq = r.actor_seq
    from (
      select l.id,
        row_number() over (partition by l.server_id order by l.timestamp, l.id) as seq,
        te.id as event_term, row_number() over (partition by te.id order by l.timestamp, l.id) as event_seq,
        ti.id as ip_term, row_number() over (partition by ti.id order by l.timestamp, l.id) as ip_seq,
        ta.id as actor_term, row_number() over (partition by ta.id order by l.timestamp, l.id) as actor_seq
      from activity_logs l
      join activity_terms te on te.server_id = l.server_id and te.kind = ${sql.lit(TERM_EVENT)} and te.term = l.event
      join activity_terms ti on ti.server_id = l.server_id and ti.kind = ${sql.lit(TERM_IP)} and ti.term = coalesce(l.ip, '')
      join activity_terms ta on ta.server_id = l.server_id and ta.kind = ${sql.lit(TERM_ACTOR)}
        and ta.term = coalesce(cast(l.actor_id as varchar(20)), '')
    ) r
    where activity_logs.id = r.id
  `.execute(db);
  await sql`
    insert into activity_facets (server_id, event_term, ip_term, actor_term, total)
    select server_id, event_term, ip_term, actor_term, count(*) from activity_logs group by server_id, event_term, ip_term, actor_term
  `.execute(db);
  await sql`
    update activity_logs set facet_id = f.id from activity_facets f
    where f.server_id = activity_logs.server_id and f.event_term = activity_logs.event_term
      and f.ip_term = activity_logs.ip_term and f.actor_term = activity_logs.actor_term
  `.execute(db);
  await sql`
    insert into activity_servers (server_id, last_seq, total, last_timestamp)
    select server_id, count(*), count(*), max(timestamp) from activity_logs group by server_id
  `.execute(db);
}
