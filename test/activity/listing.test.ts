import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import type { ServerRow } from '../../src/db/schema.js';
import { recordActivities, recordActivity, SYSTEM_ACTOR, type Actor } from '../../src/modules/activity/activity.recorder.js';
import { AnchorCache, anchorCacheFor } from '../../src/modules/activity/index-engine/anchors.js';
import { pruneActivity } from '../../src/modules/activity/activity.pruner.js';
import type { ActivityListQuery, ActivityViewer } from '../../src/modules/activity/activity.types.js';
import { findPage, type ListTuning } from '../../src/modules/activity/index-engine/find-page.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import type { UserWithToken } from '../helpers/factories.js';
import {
  EVENT_NAMES,
  expectActivityInvariants,
  IPS,
  randomEntries,
  randomNeedle,
  randomSource,
  referenceListing,
} from './helpers.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const DAY = 86_400_000;
const SEED = Number(process.env.ACTIVITY_TEST_SEED ?? 20260301);

/**
 * The optimised listing (counters, vocabularies, seq ranges, rank probes)
 * against the plain ORDER BY/OFFSET/LIKE query, on random data, random
 * filters, sorts, pages and page-finding strategies; while other connections
 * insert; and after pruning.
 */
describeEachDatabase('activity listing agrees with the plain query', (database) => {
  const h = useHarness(database);

  interface World {
    servers: ServerRow[];
    owner: UserWithToken;
    sub: UserWithToken;
    others: UserWithToken[];
    actors: Actor[];
  }

  async function makeWorld(): Promise<World> {
    const { owner, server } = await h.make.ownedServer();
    const second = await h.make.server(owner.user);
    const third = await h.make.server(owner.user);
    const sub = await h.make.subuser(server, ['activity.read']);
    const others = [await h.make.user(), await h.make.user()];
    const actors: Actor[] = [
      SYSTEM_ACTOR,
      { userId: owner.user.id, apiKeyId: 1, ip: null },
      { userId: sub.user.id, apiKeyId: 2, ip: null },
      ...others.map((o) => ({ userId: o.user.id, apiKeyId: 3, ip: null })),
    ];
    return { servers: [server, second, third], owner, sub, others, actors };
  }

  function randomQuery(rand: ReturnType<typeof randomSource>, world: World) {
    const viewer: ActivityViewer = rand.chance(0.6)
      ? { userId: world.owner.user.id, seesAllIps: true }
      : { userId: world.sub.user.id, seesAllIps: false };
    const query: ActivityListQuery = { page: 1, perPage: rand.int(1, 40), ascending: rand.chance(0.5) };
    if (rand.chance(0.5)) query.event = randomNeedle(rand, EVENT_NAMES);
    if (rand.chance(0.35)) query.ip = randomNeedle(rand, IPS);
    if (rand.chance(0.3)) {
      query.actor = rand.pick([
        world.owner.user.uuid,
        world.sub.user.uuid,
        world.others[0]!.user.uuid,
        'system',
        'system',
        randomUUID(),
      ]);
    }
    const tuning: ListTuning = rand.pick<ListTuning>([{}, {}, { force: 'scan' }, { force: 'gather' }, { force: 'probe' }]);
    if (rand.chance(0.3)) tuning.windowSlack = rand.pick([0, 2]);
    if (rand.chance(0.4)) tuning.via = rand.pick(['seq', 'stream'] as const);
    if (rand.chance(0.2)) tuning.cache = false;
    const serverId = rand.chance(0.8) ? world.servers[0]!.id : rand.pick(world.servers).id;
    return { viewer, query, tuning, serverId };
  }

  /** One random query, answered both ways inside one snapshot (`db` may be a transaction). */
  async function compareOnce(rand: ReturnType<typeof randomSource>, world: World, db = h.db.db) {
    const { viewer, query, tuning, serverId } = randomQuery(rand, world);
    const { total } = await referenceListing(db, serverId, viewer, query);
    const pages = Math.max(1, Math.ceil(total / query.perPage));
    // Mostly real pages, with the ends and the first page past the end over-represented.
    query.page = rand.pick([1, pages, pages + 1, rand.int(1, pages), rand.int(1, pages)]);
    const expected = await referenceListing(db, serverId, viewer, query);
    // The process's anchor cache, also from inside a test's own snapshot.
    const actual = await findPage(
      { db, dialect: h.db.dialect, anchors: anchorCacheFor(h.db.db) },
      serverId,
      viewer,
      query,
      tuning,
    );
    const context = JSON.stringify({ serverId, viewer, query, tuning });
    expect(actual.total, context).toBe(expected.total);
    expect(
      actual.rows.map((r) => r.id),
      context,
    ).toEqual(expected.ids);
  }

  /**
   * Needles matching most terms (ranked through the complement), one term, or
   * several, under every strategy, at every page of both sorts.
   */
  async function compareFixed(world: World) {
    const serverId = world.servers[0]!.id;
    const owner: ActivityViewer = { userId: world.owner.user.id, seesAllIps: true };
    const cases: Partial<ActivityListQuery>[] = [
      { event: 'a' },
      { event: 'schedule' },
      { event: 'server:test.100%' },
      { ip: '.' },
      { ip: ':' },
      { actor: 'system' },
      { actor: world.owner.user.uuid, event: 'a' },
    ];
    for (const filters of cases) {
      const tunings: ListTuning[] = [
        {},
        { force: 'scan', via: 'seq' },
        { force: 'scan', via: 'stream' },
        { force: 'gather' },
        { force: 'probe' },
        { force: 'probe', windowSlack: 0, via: 'stream' },
      ];
      for (const tuning of tunings) {
        for (const ascending of [true, false]) {
          const perPage = 9;
          const probe: ActivityListQuery = { page: 1, perPage, ascending, ...filters };
          const { total } = await referenceListing(h.db.db, serverId, owner, probe);
          for (let page = 1; page <= Math.ceil(total / perPage) + 1; page += 3) {
            const query = { ...probe, page };
            const expected = await referenceListing(h.db.db, serverId, owner, query);
            const actual = await findPage({ db: h.db.db, dialect: h.db.dialect }, serverId, owner, query, tuning);
            const context = JSON.stringify({ query, tuning });
            expect(actual.total, context).toBe(expected.total);
            expect(
              actual.rows.map((r) => r.id),
              context,
            ).toEqual(expected.ids);
          }
        }
      }
    }
  }

  /** Both answers from one snapshot while other connections write. */
  async function compareInSnapshot(rand: ReturnType<typeof randomSource>, world: World) {
    const trx = h.db.dialect === 'postgres' ? h.db.db.transaction().setIsolationLevel('repeatable read') : h.db.db.transaction();
    await trx.execute((t) => compareOnce(rand, world, t));
  }

  async function recordInBatches(
    rand: ReturnType<typeof randomSource>,
    db: typeof h.db.db,
    entries: ReturnType<typeof randomEntries>,
  ) {
    for (let i = 0; i < entries.length;) {
      const size = rand.int(1, 25);
      const batch = entries.slice(i, i + size);
      if (batch.length === 1) await recordActivity(db, batch[0]!);
      else await recordActivities(db, batch);
      i += size;
    }
  }

  it('returns the same rows and totals as the plain query, also while others insert and after pruning', async () => {
    const rand = randomSource(SEED);
    const world = await makeWorld();
    const serverIds = world.servers.map((s) => s.id);
    const entries = randomEntries(rand, 1500, serverIds, world.actors, T0);
    await recordInBatches(rand, h.db.db, entries);
    await expectActivityInvariants(h.db.db);
    for (let i = 0; i < 250; i++) await compareOnce(rand, world);
    await compareFixed(world);

    // Concurrent writers on other connections (a second SQLite handle: another process, in effect).
    const writerHandle = h.db.dialect === 'sqlite' ? openDatabase(h.db.url) : undefined;
    const writerDb = writerHandle?.db ?? h.db.db;
    const later = T0 + 400 * DAY;
    const writers = [0, 1, 2].map(async (w) => {
      const r = randomSource(SEED + 1 + w);
      const more = randomEntries(r, 150, r.chance(0.5) ? [...serverIds].reverse() : serverIds, world.actors, later);
      await recordInBatches(r, writerDb, more);
    });
    const readers = (async () => {
      for (let i = 0; i < 60; i++) {
        await compareInSnapshot(rand, world);
        // The service's own snapshot: a page is whole and ordered whatever commits meanwhile.
        const { viewer, query, serverId } = randomQuery(rand, world);
        const page = await findPage({ db: h.db.db, dialect: h.db.dialect }, serverId, viewer, query);
        const offset = (query.page - 1) * query.perPage;
        expect(page.rows.length).toBe(Math.max(0, Math.min(query.perPage, page.total - offset)));
        const seqs = page.rows.map((r) => r.seq);
        expect(seqs).toEqual([...seqs].sort((a, b) => (query.ascending ? a - b : b - a)));
      }
    })();
    await Promise.all([...writers, readers]);
    await writerHandle?.close();
    await expectActivityInvariants(h.db.db);
    for (let i = 0; i < 80; i++) await compareOnce(rand, world);

    // Pruning, in small batches, while a writer keeps adding: then everything still agrees.
    const timestamps = (
      await h.db.db
        .selectFrom('activity_logs')
        .select('timestamp')
        .where('server_id', '=', serverIds[0]!)
        .orderBy('seq')
        .execute()
    ).map((r) => Number(r.timestamp));
    const cutoffAt = timestamps[Math.floor(timestamps.length * 0.4)]!;
    const before = timestamps.length;
    const writer = recordInBatches(rand, h.db.db, randomEntries(rand, 100, serverIds, world.actors, later + 10 * DAY));
    const deleted = await pruneActivity({ db: h.db.db, config: { activityPruneDays: 30 } }, cutoffAt + 30 * DAY, {
      batchSize: 17,
    });
    await writer;
    expect(deleted).toBeGreaterThan(0);
    const left = await h.db.db.selectFrom('activity_logs').select('timestamp').where('server_id', '=', serverIds[0]!).execute();
    expect(left.length).toBeLessThan(before + 100);
    expect(left.every((r) => Number(r.timestamp) >= cutoffAt)).toBe(true);
    await expectActivityInvariants(h.db.db);
    for (let i = 0; i < 120; i++) await compareOnce(rand, world);
  });

  it('agrees when a filter matches more terms than fit inline (long id lists)', async () => {
    const rand = randomSource(SEED + 99);
    const { owner, server } = await h.make.ownedServer();
    const users = [owner, await h.make.user(), await h.make.user()];
    const entries = [];
    for (let i = 0; i < 900; i++) {
      const user = rand.pick(users);
      entries.push({
        serverId: server.id,
        event: `server:bulk.e${rand.int(0, 89)}`,
        actor: rand.chance(0.15)
          ? SYSTEM_ACTOR
          : { userId: user.user.id, apiKeyId: 1, ip: `10.9.${rand.int(0, 12)}.${rand.int(0, 15)}` },
        timestamp: T0 + i * 1000,
      });
    }
    await recordActivities(h.db.db, entries);
    await expectActivityInvariants(h.db.db);
    const viewer: ActivityViewer = { userId: owner.user.id, seesAllIps: true };
    const cases: Partial<ActivityListQuery>[] = [
      { ip: '10.9.' },
      { ip: '10.9.1' },
      { event: 'bulk.e' },
      { event: 'e1' },
      { event: 'e', ip: '.1' },
      { actor: users[1]!.user.uuid, ip: '10.9' },
    ];
    for (const filters of cases) {
      for (const tuning of [
        {},
        { force: 'scan', via: 'seq' },
        { force: 'scan', via: 'stream' },
        { force: 'gather' },
        { force: 'probe' },
      ] as ListTuning[]) {
        for (const ascending of [true, false]) {
          for (const page of [1, 2, 7, 20, 40]) {
            const query: ActivityListQuery = { page, perPage: 11, ascending, ...filters };
            const expected = await referenceListing(h.db.db, server.id, viewer, query);
            const actual = await findPage({ db: h.db.db, dialect: h.db.dialect }, server.id, viewer, query, tuning);
            const context = JSON.stringify({ query, tuning });
            expect(actual.total, context).toBe(expected.total);
            expect(
              actual.rows.map((r) => r.id),
              context,
            ).toEqual(expected.ids);
          }
        }
      }
    }
  });

  it('never lets an older snapshot use anchors learned beyond its end', async () => {
    const { owner, server } = await h.make.ownedServer();
    const viewer: ActivityViewer = { userId: owner.user.id, seesAllIps: true };
    const actor: Actor = { userId: owner.user.id, apiKeyId: 1, ip: '10.0.0.1' };
    const batch = (from: number, count: number) =>
      Array.from({ length: count }, (_, i) => ({
        serverId: server.id,
        event: i % 3 === 0 ? 'server:backup.start' : 'server:file.write',
        actor: i % 2 === 0 ? actor : SYSTEM_ACTOR,
        timestamp: T0 + (from + i) * 1000,
      }));
    await recordActivities(h.db.db, batch(0, 300));
    const anchors = new AnchorCache();
    const other = h.db.dialect === 'sqlite' ? openDatabase(h.db.url) : undefined;
    const otherDb = other?.db ?? h.db.db;
    const query: ActivityListQuery = { page: 1, perPage: 10, ascending: false, event: 'backup' };
    const snapshot =
      h.db.dialect === 'postgres' ? h.db.db.transaction().setIsolationLevel('repeatable read') : h.db.db.transaction();
    try {
      await snapshot.execute(async (trx) => {
        const before = await findPage({ db: trx, dialect: h.db.dialect, anchors }, server.id, viewer, query);
        // Meanwhile: more entries, and a listing that learns anchors near the new end.
        await recordActivities(otherDb, batch(300, 300));
        for (const page of [1, 2, 3])
          await findPage({ db: otherDb, dialect: h.db.dialect, anchors }, server.id, viewer, { ...query, page });
        for (const page of [1, 2, 3]) {
          const expected = await referenceListing(trx, server.id, viewer, { ...query, page });
          const actual = await findPage(
            { db: trx, dialect: h.db.dialect, anchors },
            server.id,
            viewer,
            { ...query, page },
            { force: 'scan' },
          );
          expect(actual.total).toBe(before.total);
          expect(actual.rows.map((r) => r.id)).toEqual(expected.ids);
        }
      });
    } finally {
      await other?.close();
    }
  });
});
