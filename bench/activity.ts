/**
 * Activity listing benchmark (issue #3, docs/PERFORMANCE.md).
 *
 * Generates 3,000,000 entries across 1,000 servers, 1,000,000 of them on one
 * server, with about 30 event names, a few thousand IPv4 and IPv6 addresses and
 * several actors plus the system, on SQLite and on PostgreSQL. The entries are
 * bulk-loaded and the listing structures derived by migration 002's rebuild,
 * which the test suite proves equal to what the recorder writes entry by entry
 * (test/activity/recorder.test.ts).
 *
 * Then, for each case (page depths, both sorts, each filter broad and
 * selective, two filters, system), it times the route's own code path —
 * parseActivityQuery → findPage → activityItem — and, on the same tables,
 * the Pterodactyl-shaped query (COUNT(*), then ORDER BY + LIMIT/OFFSET, with
 * `lower(column) LIKE '%x%'` filters) with the index 001 had for it. Every
 * case's rows and total are checked against that baseline.
 *
 *   npm run bench:activity [-- --only sqlite|postgres]
 *
 * Environment: ACTIVITY_BENCH_ROWS (default 3000000), ACTIVITY_BENCH_RUNS
 * (timed runs per case, default 30), ACTIVITY_BENCH_BASELINE_RUNS (default 5),
 * BENCH_DATABASE_URL or TEST_DATABASE_URL for PostgreSQL (a fresh schema is made
 * and dropped; skipped with a note when neither is set). ACTIVITY_BENCH_REUSE=<dir>
 * keeps the data (SQLite in <dir>, PostgreSQL in schema bench_activity_kept) and
 * reuses it on the next run, for iterating on the listing without regenerating.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import qs from 'qs';
import { sql } from 'kysely';
import { openDatabase, type DatabaseHandle, type DialectName } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { openSqliteConnection } from '../src/db/sqlite-driver.js';
import { createActivityLogIndexes, dropActivityLogIndexes, rebuildActivityIndex } from '../src/db/migrations/002_activity.js';
import { pruneActivity } from '../src/modules/activity/activity.pruner.js';
import { recordActivity } from '../src/modules/activity/activity.recorder.js';
import { AnchorCache } from '../src/modules/activity/index-engine/anchors.js';
import { parseActivityQuery } from '../src/modules/activity/activity.schemas.js';
import type { ActivityListQuery, ActivityViewer } from '../src/modules/activity/activity.types.js';
import { findPage } from '../src/modules/activity/index-engine/find-page.js';
import { activityItem } from '../src/modules/activity/activity.transformer.js';
import { cumulative, formatMs, measure, seeded, table, type Timing } from './lib/stats.js';

const ROWS = Number(process.env.ACTIVITY_BENCH_ROWS ?? 3_000_000);
const RUNS = Number(process.env.ACTIVITY_BENCH_RUNS ?? 30);
const BASELINE_RUNS = Number(process.env.ACTIVITY_BENCH_BASELINE_RUNS ?? 5);
const SERVERS = 1000;
const BIG_ACTORS = 8;
const DAY = 86_400_000;
/** Keep the generated databases; with REUSE (a directory), generate once and measure again on later runs. */
const KEEP = process.env.ACTIVITY_BENCH_KEEP === '1' || process.env.ACTIVITY_BENCH_REUSE !== undefined;
const REUSE = process.env.ACTIVITY_BENCH_REUSE?.trim() || undefined;
const args = process.argv.slice(2);
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;

// ------------------------------------------------------------------ the data

/** About thirty events: [name, relative frequency, written by the system]. */
const EVENTS: [string, number, boolean][] = [
  ['server:schedule.run', 8, true],
  ['server:power.start', 3, true],
  ['server:power.stop', 3, true],
  ['server:power.restart', 4, true],
  ['server:power.kill', 0.5, true],
  ['server:console.command', 10, true],
  ['server:file.delete', 1, true],
  ['server:backup.complete', 2, true],
  ['server:backup.fail', 0.2, true],
  ['server:backup.restore-complete', 0.3, true],
  ['server:backup.restore-failed', 0.05, true],
  ['server:schedule.create', 1, false],
  ['server:schedule.update', 2, false],
  ['server:schedule.delete', 0.5, false],
  ['server:schedule.execute', 1, false],
  ['server:task.create', 1, false],
  ['server:task.update', 1.5, false],
  ['server:task.delete', 0.4, false],
  ['server:backup.start', 2, false],
  ['server:backup.delete', 1, false],
  ['server:backup.lock', 0.3, false],
  ['server:backup.unlock', 0.2, false],
  ['server:backup.restore', 0.3, false],
  ['server:file.write', 12, false],
  ['server:file.read', 15, false],
  ['server:file.rename', 3, false],
  ['server:file.uploaded', 4, false],
  ['server:file.compress', 1, false],
  ['server:sftp.create', 6, false],
  ['server:settings.rename', 0.3, false],
];
const EVENT_WEIGHTS = cumulative(EVENTS.map((e) => e[1]));
const PROPERTIES = EVENTS.map(([name]) =>
  name.includes('console')
    ? '{"command":"say hello"}'
    : name.includes('power')
      ? '{}'
      : name.includes('file')
        ? '{"files":["logs/latest.log"]}'
        : '{"name":"Nightly"}',
);

/** 3,000 addresses: two thirds IPv4 (private and public ranges), one third IPv6. */
function addressPool(): string[] {
  const r = seeded(11);
  const pool = new Set<string>();
  while (pool.size < 3000) {
    const kind = r.next();
    if (pool.size % 3 === 2) {
      const hex = () => r.int(0, 0xffff).toString(16);
      pool.add(
        kind < 0.5
          ? `2001:db8:${hex()}:${hex()}::${hex()}`
          : `2a02:${hex()}:${hex()}:${hex()}:${hex()}:${hex()}:${hex()}:${hex()}`,
      );
    } else if (kind < 0.25) pool.add(`10.${r.int(0, 255)}.${r.int(0, 255)}.${r.int(1, 254)}`);
    else if (kind < 0.5) pool.add(`192.168.${r.int(0, 255)}.${r.int(1, 254)}`);
    else pool.add(`${r.int(11, 223)}.${r.int(0, 255)}.${r.int(0, 255)}.${r.int(1, 254)}`);
  }
  return [...pool];
}

interface Dataset {
  bigServerId: number;
  smallServerIds: number[];
  bigActors: { id: number; uuid: string }[];
  ownerOfSmall: number[];
  ips: string[];
}

interface RawEntry {
  server_id: number;
  event: string;
  ip: string | null;
  actor_id: number | null;
  api_key_id: number | null;
  properties: string;
  timestamp: number;
}

/**
 * The entries in insertion order: every third one on the big server, the rest
 * spread over 999 others; timestamps rise over 85 days (nothing is prunable).
 * The big server's actors use their own slice of 300 addresses each, with a
 * skew; each small server's owner uses a few.
 */
function* entries(data: Dataset): Generator<RawEntry> {
  const r = seeded(42);
  const actorWeights = cumulative([35, 25, 15, 10, 7, 4, 3.5, 0.5]);
  const ipWeights = cumulative(Array.from({ length: 300 }, (_, i) => 1 / (i + 1)));
  const start = Date.now() - 85 * DAY;
  const span = 85 * DAY;
  for (let i = 0; i < ROWS; i++) {
    const big = i % 3 === 0;
    const small = r.int(0, data.smallServerIds.length - 1);
    const e = r.weighted(EVENT_WEIGHTS);
    const [event, , system] = EVENTS[e]!;
    let actor: number | null = null;
    let ip: string | null = null;
    if (!system) {
      if (big) {
        const a = r.weighted(actorWeights);
        actor = data.bigActors[a]!.id;
        ip = data.ips[a * 300 + r.weighted(ipWeights)]!;
      } else {
        actor = data.ownerOfSmall[small]!;
        ip = data.ips[2400 + ((small * 7 + r.int(0, 2)) % 600)]!;
      }
    }
    yield {
      server_id: big ? data.bigServerId : data.smallServerIds[small]!,
      event,
      ip,
      actor_id: actor,
      api_key_id: actor === null ? null : 1,
      properties: PROPERTIES[e]!,
      timestamp: start + Math.floor((i * span) / ROWS),
    };
  }
}

async function createPeopleAndServers(handle: DatabaseHandle): Promise<Dataset> {
  const db = handle.db;
  const now = Date.now();
  const users = Array.from({ length: SERVERS + BIG_ACTORS }, (_, i) => ({
    uuid: randomUUID(),
    username: `bench_${i}`,
    email: `bench_${i}@example.test`,
    root_admin: 0,
    use_totp: 0,
    created_at: now,
  }));
  for (let i = 0; i < users.length; i += 500)
    await db
      .insertInto('users')
      .values(users.slice(i, i + 500))
      .execute();
  const userRows = await db.selectFrom('users').select(['id', 'uuid', 'username']).orderBy('id').execute();
  const bigActors = userRows.slice(0, BIG_ACTORS).map((u) => ({ id: u.id, uuid: u.uuid }));
  const owners = userRows.slice(BIG_ACTORS);
  const servers = Array.from({ length: SERVERS }, (_, i) => {
    const uuid = randomUUID();
    return {
      uuid,
      uuid_short: uuid.slice(0, 8),
      name: `bench server ${i}`,
      owner_id: i === 0 ? bigActors[0]!.id : owners[i]!.id,
      status: null,
      backup_limit: 10,
      startup: null,
      stop_command: null,
      node: 'local',
      created_at: now,
      updated_at: now,
    };
  });
  for (let i = 0; i < servers.length; i += 500)
    await db
      .insertInto('servers')
      .values(servers.slice(i, i + 500))
      .execute();
  const serverRows = await db.selectFrom('servers').select(['id', 'owner_id']).orderBy('id').execute();
  return {
    bigServerId: serverRows[0]!.id,
    smallServerIds: serverRows.slice(1).map((s) => s.id),
    ownerOfSmall: serverRows.slice(1).map((s) => s.owner_id),
    bigActors,
    ips: addressPool(),
  };
}

// ------------------------------------------------------------------ loading

async function loadSqlite(file: string, data: Dataset) {
  const raw = openSqliteConnection(file);
  raw.exec('PRAGMA journal_mode = WAL');
  raw.exec('PRAGMA synchronous = OFF');
  const insert = raw.prepare(
    'insert into activity_logs (server_id, event, ip, actor_id, api_key_id, properties, timestamp) values (?, ?, ?, ?, ?, ?, ?)',
  );
  const batch = (rows: RawEntry[]) => {
    raw.exec('BEGIN');
    for (const e of rows) insert.run([e.server_id, e.event, e.ip, e.actor_id, e.api_key_id, e.properties, e.timestamp]);
    raw.exec('COMMIT');
  };
  let rows: RawEntry[] = [];
  for (const e of entries(data)) {
    rows.push(e);
    if (rows.length === 100_000) {
      batch(rows);
      rows = [];
    }
  }
  batch(rows);
  raw.close();
}

async function loadPostgres(url: string, schema: string, data: Dataset) {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  const flush = async (rows: RawEntry[]) => {
    if (rows.length === 0) return;
    await client.query(
      `insert into activity_logs (server_id, event, ip, actor_id, api_key_id, properties, timestamp)
       select * from unnest($1::int[], $2::text[], $3::text[], $4::int[], $5::int[], $6::text[], $7::bigint[])`,
      [
        rows.map((r) => r.server_id),
        rows.map((r) => r.event),
        rows.map((r) => r.ip),
        rows.map((r) => r.actor_id),
        rows.map((r) => r.api_key_id),
        rows.map((r) => r.properties),
        rows.map((r) => r.timestamp),
      ],
    );
  };
  let rows: RawEntry[] = [];
  for (const e of entries(data)) {
    rows.push(e);
    if (rows.length === 20_000) {
      await flush(rows);
      rows = [];
    }
  }
  await flush(rows);
  await client.end();
}

// ------------------------------------------------------------------ the cases

interface Case {
  name: string;
  /** The query string as a client would send it. */
  query: string;
  server: 'big' | 'small';
}

function cases(data: Dataset, ips: { broad: string; selective: string }, pages: { all: number }): Case[] {
  const uuid = (i: number) => data.bigActors[i]!.uuid;
  return [
    { name: 'first page', query: '', server: 'big' },
    { name: 'page 100', query: 'page=100', server: 'big' },
    { name: 'page 10,000', query: 'page=10000', server: 'big' },
    { name: `last page (${pages.all})`, query: `page=${pages.all}`, server: 'big' },
    { name: 'sort=timestamp, first page', query: 'sort=timestamp', server: 'big' },
    { name: 'sort=timestamp, page 10,000', query: 'sort=timestamp&page=10000', server: 'big' },
    { name: 'per_page=100, page 5,000', query: 'per_page=100&page=5000', server: 'big' },
    { name: 'event broad "file"', query: 'filter[event]=file', server: 'big' },
    { name: 'event broad "backup"', query: 'filter[event]=backup', server: 'big' },
    { name: 'event selective "restore-failed"', query: 'filter[event]=restore-failed', server: 'big' },
    { name: `ip broad "${ips.broad}"`, query: `filter[ip]=${ips.broad}`, server: 'big' },
    { name: 'ip selective (one address)', query: `filter[ip]=${encodeURIComponent(ips.selective)}`, server: 'big' },
    { name: 'actor broad (top user)', query: `filter[actor_id]=${uuid(0)}`, server: 'big' },
    { name: 'actor selective (rare user)', query: `filter[actor_id]=${uuid(7)}`, server: 'big' },
    { name: 'actor_id=system', query: 'filter[actor_id]=system', server: 'big' },
    { name: 'event "file" + ip broad', query: `filter[event]=file&filter[ip]=${ips.broad}`, server: 'big' },
    { name: 'event "backup" + actor top user', query: `filter[event]=backup&filter[actor_id]=${uuid(0)}`, server: 'big' },
    { name: 'event "console" + actor system', query: 'filter[event]=console&filter[actor_id]=system', server: 'big' },
    { name: 'deep: event "file", page 5,000', query: 'filter[event]=file&page=5000', server: 'big' },
    { name: 'deep: event "backup", page 2,900', query: 'filter[event]=backup&page=2900', server: 'big' },
    { name: 'deep: ip broad, page 2,000', query: `filter[ip]=${ips.broad}&page=2000`, server: 'big' },
    { name: 'deep: actor top user, page 4,000', query: `filter[actor_id]=${uuid(0)}&page=4000`, server: 'big' },
    {
      name: 'deep: system, sort=timestamp, page 7,000',
      query: 'filter[actor_id]=system&sort=timestamp&page=7000',
      server: 'big',
    },
    { name: 'deep: "file" + ip broad, page 500', query: `filter[event]=file&filter[ip]=${ips.broad}&page=500`, server: 'big' },
    {
      name: 'deepest: "file" + ip broad, middle page 1,568',
      query: `filter[event]=file&filter[ip]=${ips.broad}&page=1568`,
      server: 'big',
    },
    { name: 'small server, first page', query: '', server: 'small' },
    { name: 'small server, event "file"', query: 'filter[event]=file', server: 'small' },
  ];
}

/** The Pterodactyl-shaped answer: COUNT(*), then ORDER BY + OFFSET, filters as lower(column) LIKE '%x%'. */
async function baseline(handle: DatabaseHandle, serverId: number, query: ActivityListQuery) {
  const like = (value: string) => `%${value.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const where = [sql`server_id = ${serverId}`];
  if (query.event !== undefined) where.push(sql`lower(event) like ${like(query.event)} escape '\\'`);
  if (query.ip !== undefined) where.push(sql`lower(ip) like ${like(query.ip)} escape '\\'`);
  if (query.actor === 'system') where.push(sql`actor_id is null`);
  else if (query.actor !== undefined) where.push(sql`actor_id = (select id from users where uuid = ${query.actor})`);
  const condition = sql.join(where, sql` and `);
  const direction = query.ascending ? sql`asc` : sql`desc`;
  const count = await sql<{ n: number | string }>`select count(*) as n from activity_logs where ${condition}`.execute(handle.db);
  const rows = await sql<{ id: number | string }>`
    select * from activity_logs where ${condition} order by timestamp ${direction}, id ${direction}
    limit ${query.perPage} offset ${(query.page - 1) * query.perPage}
  `.execute(handle.db);
  return { total: Number(count.rows[0]!.n), ids: rows.rows.map((r) => Number(r.id)) };
}

interface Result {
  database: DialectName;
  case: string;
  total: number;
  ours: Timing;
  baseline: Timing;
}

/** The ids of a dataset generated earlier (ACTIVITY_BENCH_REUSE): people and servers are made in a fixed order. */
async function datasetOf(handle: DatabaseHandle): Promise<Dataset> {
  const users = await handle.db.selectFrom('users').select(['id', 'uuid']).orderBy('id').execute();
  const servers = await handle.db.selectFrom('servers').select(['id', 'owner_id']).orderBy('id').execute();
  return {
    bigServerId: servers[0]!.id,
    smallServerIds: servers.slice(1).map((s) => s.id),
    ownerOfSmall: servers.slice(1).map((s) => s.owner_id),
    bigActors: users.slice(0, BIG_ACTORS).map((u) => ({ id: u.id, uuid: u.uuid })),
    ips: addressPool(),
  };
}

async function generate(
  dialect: DialectName,
  handle: DatabaseHandle,
  load: (data: Dataset) => Promise<void>,
  log: (line: string) => void,
) {
  const t0 = Date.now();
  const data = await createPeopleAndServers(handle);
  await dropActivityLogIndexes(handle.db);
  await load(data);
  const tLoad = Date.now();
  await rebuildActivityIndex(handle.db);
  const tRebuild = Date.now();
  await createActivityLogIndexes(handle.db, dialect);
  // As a database in service would be: PostgreSQL vacuumed and analysed (autovacuum), SQLite's WAL checkpointed.
  if (dialect === 'postgres') await sql`vacuum analyze`.execute(handle.db);
  else await sql`pragma wal_checkpoint(truncate)`.execute(handle.db);
  const tIndex = Date.now();
  log(
    `${dialect}: ${ROWS.toLocaleString('en')} entries loaded in ${((tLoad - t0) / 1000).toFixed(0)} s, ` +
      `listing structures derived in ${((tRebuild - tLoad) / 1000).toFixed(0)} s, indexed in ${((tIndex - tRebuild) / 1000).toFixed(0)} s`,
  );
  return data;
}

async function runOn(
  dialect: DialectName,
  handle: DatabaseHandle,
  load: ((data: Dataset) => Promise<void>) | undefined,
  log: (line: string) => void,
): Promise<Result[]> {
  const data = load ? await generate(dialect, handle, load, log) : await datasetOf(handle);

  const bigTotal = Number(
    (
      await handle.db
        .selectFrom('activity_servers')
        .select('total')
        .where('server_id', '=', data.bigServerId)
        .executeTakeFirstOrThrow()
    ).total,
  );
  // The selective address: one of the top user's, a few hundred entries.
  const ipCounts = await handle.db
    .selectFrom('activity_terms')
    .select(['term', 'total'])
    .where('server_id', '=', data.bigServerId)
    .where('kind', '=', 2)
    .where('term', 'like', '2001:db8:%')
    .orderBy('total', 'desc')
    .limit(20)
    .execute();
  const ips = { broad: '192.168', selective: ipCounts[ipCounts.length - 1]?.term ?? '2001:db8::1' };
  const viewer: ActivityViewer = { userId: data.bigActors[0]!.id, seesAllIps: true };
  const deps = { db: handle.db, dialect };
  const results: Result[] = [];

  const all = cases(data, ips, { all: Math.ceil(bigTotal / 25) });
  // The route's path minus HTTP: parse the query, list, shape every item.
  const timed: {
    c: Case;
    serverId: number;
    query: ActivityListQuery;
    ours: Timing & { last: { total: number; ids: number[] } };
  }[] = [];
  for (const c of all) {
    const serverId = c.server === 'big' ? data.bigServerId : data.smallServerIds[17]!;
    // Parsed as the app parses query strings (app.ts), then validated by the route's own parser.
    const query = parseActivityQuery(qs.parse(c.query, { depth: 2, parameterLimit: 100, allowPrototypes: false }));
    const ours = await measure(
      async () => {
        // Cold: without the anchors earlier requests leave behind (index-engine/anchors.ts), every
        // run finds its page from scratch, as a first request for that page would.
        const page = await findPage(deps, serverId, viewer, query, { cache: false });
        const items = page.rows.map((row) => activityItem(row, viewer));
        return { total: page.total, ids: items.map((i) => Number(i.attributes.id)) };
      },
      { runs: RUNS, warmup: 3 },
    );
    timed.push({ c, serverId, query, ours });
  }

  // The baseline gets the index 001 had for exactly this query.
  await sql`create index if not exists bench_baseline_server_timestamp on activity_logs (server_id, timestamp, id)`.execute(
    handle.db,
  );
  if (dialect === 'postgres') await sql`analyze activity_logs`.execute(handle.db);
  for (const { c, serverId, query, ours } of timed) {
    const base = await measure(() => baseline(handle, serverId, query), { runs: BASELINE_RUNS, warmup: 1 });
    if (base.last.total !== ours.last.total || JSON.stringify(base.last.ids) !== JSON.stringify(ours.last.ids)) {
      throw new Error(`${dialect} ${c.name}: listing differs from the baseline (${ours.last.total} vs ${base.last.total})`);
    }
    results.push({ database: dialect, case: c.name, total: ours.last.total, ours, baseline: base });
    log(`  ${c.name}: ${formatMs(ours.median)} ms (baseline ${formatMs(base.median)} ms), total ${ours.last.total}`);
  }
  await sql`drop index bench_baseline_server_timestamp`.execute(handle.db);

  // Paging on through the deepest case with the route's defaults: each page starts from the
  // anchors the previous one left (index-engine/anchors.ts).
  {
    const query = parseActivityQuery(
      qs.parse(`filter[event]=file&filter[ip]=${ips.broad}&page=1500`, { depth: 2, parameterLimit: 100, allowPrototypes: false }),
    );
    const anchors = new AnchorCache();
    let page = 1500;
    const walk = await measure(
      async () => {
        const result = await findPage({ ...deps, anchors }, data.bigServerId, viewer, { ...query, page: page++ });
        return result.total;
      },
      { runs: RUNS, warmup: 1 },
    );
    const timing = { median: walk.median, p95: walk.p95, runs: walk.runs };
    results.push({
      database: dialect,
      case: 'paging on: "file" + ip broad, pages 1,501+ one by one',
      total: walk.last,
      ours: timing,
      baseline: { median: NaN, p95: NaN, runs: 0 },
    });
    log(`  paging on from page 1,500: ${formatMs(walk.median)} ms a page`);
  }

  // What the structures cost a writer: one entry per transaction, as an API call writes it,
  // against a plain insert into a copy of 001's table and indexes.
  await sql`create table bench_plain_logs as select id, server_id, batch, event, ip, description, actor_id, api_key_id, properties, timestamp from activity_logs where 1 = 0`.execute(
    handle.db,
  );
  await sql`create index bench_plain_server_timestamp on bench_plain_logs (server_id, timestamp, id)`.execute(handle.db);
  await sql`create index bench_plain_server_actor on bench_plain_logs (server_id, actor_id, timestamp, id)`.execute(handle.db);
  const actor = { userId: data.bigActors[1]!.id, apiKeyId: 1, ip: data.ips[300]! };
  let n = 0;
  const entry = () => ({
    serverId: data.bigServerId,
    event: 'server:file.write',
    actor,
    properties: { files: ['a.txt'] },
    timestamp: Date.now() + n++,
  });
  const insertRuns = { runs: Math.max(RUNS * 10, 100), warmup: 10 };
  const recorder = await measure(() => recordActivity(handle.db, entry()), insertRuns);
  const plain = await measure(
    () =>
      handle.db.transaction().execute(async (trx) => {
        const e = entry();
        await sql`insert into bench_plain_logs (id, server_id, event, ip, actor_id, api_key_id, properties, timestamp)
                  values (${10_000_000 + n}, ${e.serverId}, ${e.event}, ${actor.ip}, ${actor.userId}, 1, '{}', ${e.timestamp})`.execute(
          trx,
        );
      }),
    insertRuns,
  );
  await sql`drop table bench_plain_logs`.execute(handle.db);
  results.push({ database: dialect, case: 'write: one entry (own transaction)', total: 1, ours: recorder, baseline: plain });
  log(`  write one entry: ${formatMs(recorder.median)} ms (plain insert ${formatMs(plain.median)} ms)`);

  // Pruning a day's worth of the oldest entries (a fresh dataset only: it deletes them).
  if (load) {
    const oldest = Number(
      (await sql<{ t: number | string }>`select min(timestamp) as t from activity_logs`.execute(handle.db)).rows[0]!.t,
    );
    const cutoff = oldest + DAY;
    const start = process.hrtime.bigint();
    const deleted = await pruneActivity({ db: handle.db, config: { activityPruneDays: 1 } }, cutoff + DAY);
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    const timing = { median: ms, p95: ms, runs: 1 };
    results.push({
      database: dialect,
      case: `prune: ${deleted.toLocaleString('en')} oldest entries, 500 per transaction`,
      total: deleted,
      ours: timing,
      baseline: { median: NaN, p95: NaN, runs: 0 },
    });
    log(`  prune ${deleted} entries: ${formatMs(ms)} ms (${Math.round(deleted / (ms / 1000)).toLocaleString('en')} entries/s)`);
  }
  return results;
}

// ------------------------------------------------------------------ main

async function main() {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const results: Result[] = [];
  if (only !== 'postgres') {
    const reuse = REUSE ? path.join(REUSE, 'bench.sqlite') : undefined;
    const dir = REUSE ?? fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bench-activity-'));
    const file = path.join(dir, 'bench.sqlite');
    const fresh = !reuse || !fs.existsSync(reuse);
    const handle = openDatabase(`sqlite:${file}`);
    try {
      await migrateToLatest(handle);
      results.push(...(await runOn('sqlite', handle, fresh ? (data) => loadSqlite(file, data) : undefined, log)));
    } finally {
      await handle.close();
      if (!KEEP) fs.rmSync(dir, { recursive: true, force: true });
      else log(`sqlite database kept in ${dir} (ACTIVITY_BENCH_REUSE=${dir})`);
    }
  }
  const pgUrl = process.env.BENCH_DATABASE_URL?.trim() || process.env.TEST_DATABASE_URL?.trim();
  if (only !== 'sqlite') {
    if (!pgUrl) log('PostgreSQL skipped: set BENCH_DATABASE_URL or TEST_DATABASE_URL.');
    else {
      const schema = REUSE ? 'bench_activity_kept' : `bench_activity_${randomBytes(4).toString('hex')}`;
      const admin = new pg.Client({ connectionString: pgUrl });
      await admin.connect();
      const exists =
        (await admin.query('select 1 from information_schema.schemata where schema_name = $1', [schema])).rowCount! > 0;
      if (!exists) await admin.query(`create schema ${schema}`);
      const handle = openDatabase(pgUrl, { searchPath: schema, poolSize: 4 });
      try {
        await migrateToLatest(handle);
        results.push(...(await runOn('postgres', handle, exists ? undefined : (data) => loadPostgres(pgUrl, schema, data), log)));
      } finally {
        await handle.close();
        if (!KEEP) await admin.query(`drop schema ${schema} cascade`);
        else log(`postgres schema ${schema} kept`);
        await admin.end();
      }
    }
  }

  const rows = results.map((r) => [
    `${r.database} ${r.case}`,
    r.total.toLocaleString('en'),
    formatMs(r.ours.median),
    formatMs(r.ours.p95),
    formatMs(r.baseline.median),
    formatMs(r.baseline.p95),
    Number.isFinite(r.baseline.median)
      ? `${(r.baseline.median / r.ours.median).toFixed(r.baseline.median < r.ours.median * 10 ? 1 : 0)}x`
      : '-',
  ]);
  process.stdout.write(
    `\nActivity listing, ${ROWS.toLocaleString('en')} entries (1/3 on one server); ms, median and p95 of ${RUNS} runs (baseline ${BASELINE_RUNS})\n\n` +
      table(['case', 'total', 'median', 'p95', 'baseline med', 'baseline p95', 'speedup'], rows) +
      '\n\n',
  );
  process.stdout.write(
    `${JSON.stringify({
      bench: 'activity',
      rows: ROWS,
      runs: RUNS,
      results: results.map((r) => ({
        database: r.database,
        case: r.case,
        total: r.total,
        median_ms: +r.ours.median.toFixed(3),
        p95_ms: +r.ours.p95.toFixed(3),
        baseline_median_ms: +r.baseline.median.toFixed(3),
        baseline_p95_ms: +r.baseline.p95.toFixed(3),
      })),
    })}\n`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
