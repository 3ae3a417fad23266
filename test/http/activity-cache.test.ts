import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import type { ServerRow } from '../../src/db/schema.js';
import { ListingCache } from '../../src/modules/activity/activity.listing-cache.js';
import { pruneActivity } from '../../src/modules/activity/activity.pruner.js';
import { recordActivity, SYSTEM_ACTOR, type Actor } from '../../src/modules/activity/activity.recorder.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import type { UserWithToken } from '../helpers/factories.js';

const DAY = 86_400_000;

/**
 * The rendered-listing cache (activity.listing-cache.ts): every request checks
 * the database's version of what the listing shows, so a cached answer is
 * always the answer a fresh render would give, whoever changed the data.
 */
describeEachDatabase('activity listing cache', (database) => {
  const h = useHarness(database);
  /** A second instance on the same database, with the cache off: what a fresh render says. */
  let uncached: FastifyInstance;
  beforeAll(async () => {
    uncached = await buildApp({ ...h.deps, config: { ...h.config, activityCacheMb: 0 } }, { logger: false });
    await uncached.ready();
  });
  afterAll(async () => {
    await uncached?.close();
  });

  const by = (who: UserWithToken, ip: string): Actor => ({ userId: who.user.id, apiKeyId: 1, ip });
  const record = (server: ServerRow, event: string, actor: Actor, at: number) =>
    recordActivity(h.db.db, { serverId: server.id, event, actor, properties: {}, timestamp: at });
  const url = (server: ServerRow, query = '') => `/api/client/servers/${server.uuid_short}/activity${query ? `?${query}` : ''}`;
  const headers = (who: UserWithToken) => ({ authorization: `Bearer ${who.token}` });

  async function both(who: UserWithToken, server: ServerRow, query = '') {
    const cached = await h.app.inject({ method: 'GET', url: url(server, query), headers: headers(who) });
    const fresh = await uncached.inject({ method: 'GET', url: url(server, query), headers: headers(who) });
    expect(cached.statusCode, cached.body).toBe(200);
    expect(cached.headers['content-type']).toBe('application/json; charset=utf-8');
    // Byte for byte what the uncached instance renders.
    expect(cached.body).toBe(fresh.body);
    return cached.json() as {
      data: {
        attributes: {
          event: string;
          ip: string | null;
          relationships: { actor: { attributes: { username: string; email: string } | null } };
        };
      }[];
      meta: { pagination: { total: number } };
    };
  }

  it('renders again after every write to the log, by this instance or any other', async () => {
    const { owner, server } = await h.make.ownedServer();
    const now = h.clock.now();
    await record(server, 'server:test.one', by(owner, '203.0.113.1'), now);
    for (const query of ['', 'page=1&per_page=1', 'filter[event]=test']) {
      expect((await both(owner, server, query)).meta.pagination.total).toBe(1);
      expect((await both(owner, server, query)).meta.pagination.total).toBe(1);
    }

    // Written directly (as another instance would), then through the API of the uncached instance.
    await record(server, 'server:test.two', SYSTEM_ACTOR, now + 1);
    let listing = await both(owner, server);
    expect(listing.data.map((d) => d.attributes.event)).toEqual(['server:test.two', 'server:test.one']);
    expect((await both(owner, server, 'page=1&per_page=1')).data[0]!.attributes.event).toBe('server:test.two');
    expect((await both(owner, server, 'filter[event]=test')).meta.pagination.total).toBe(2);

    const created = await uncached.inject({
      method: 'POST',
      url: `/api/client/servers/${server.uuid_short}/schedules`,
      headers: headers(owner),
      payload: { name: 'Nightly', minute: '0', hour: '3', day_of_month: '*', month: '*', day_of_week: '*' },
    });
    expect(created.statusCode, created.body).toBe(200);
    listing = await both(owner, server);
    expect(listing.data[0]!.attributes.event).toBe('server:schedule.create');
    expect(listing.meta.pagination.total).toBe(3);
  });

  it('renders again after old entries are pruned', async () => {
    const { owner, server } = await h.make.ownedServer();
    const now = h.clock.now();
    for (let i = 0; i < 3; i += 1) await record(server, `server:test.old${i}`, by(owner, '203.0.113.2'), now - 100 * DAY + i);
    await record(server, 'server:test.new', by(owner, '203.0.113.2'), now);
    expect((await both(owner, server)).meta.pagination.total).toBe(4);
    expect((await both(owner, server, 'sort=timestamp')).data[0]!.attributes.event).toBe('server:test.old0');

    await pruneActivity({ db: h.db.db, config: { activityPruneDays: 90 } }, now);
    const listing = await both(owner, server, 'sort=timestamp');
    expect(listing.meta.pagination.total).toBe(1);
    expect(listing.data.map((d) => d.attributes.event)).toEqual(['server:test.new']);
  });

  it("renders again when an actor's user row changes or goes, whoever changes it", async () => {
    const { owner, server } = await h.make.ownedServer();
    const actor = await h.make.user();
    await record(server, 'server:test.by-actor', by(actor, '203.0.113.3'), h.clock.now());
    expect((await both(owner, server)).data[0]!.attributes.relationships.actor.attributes!.username).toBe(actor.user.username);

    // Not through Quetzal at all: an operator's SQL.
    await sql`update users set username = ${'renamed_' + actor.user.id}, email = ${'renamed@example.test'} where id = ${actor.user.id}`.execute(
      h.db.db,
    );
    let listing = await both(owner, server);
    expect(listing.data[0]!.attributes.relationships.actor.attributes).toMatchObject({
      username: `renamed_${actor.user.id}`,
      email: 'renamed@example.test',
    });

    await sql`delete from api_keys where user_id = ${actor.user.id}`.execute(h.db.db);
    await sql`delete from users where id = ${actor.user.id}`.execute(h.db.db);
    listing = await both(owner, server);
    expect(listing.data[0]!.attributes.relationships.actor).toEqual({ object: 'null_resource', attributes: null });
  });

  it("keeps owners' and subusers' listings apart: each sees only the IPs they may", async () => {
    const { owner, server } = await h.make.ownedServer();
    const sub = await h.make.subuser(server, ['activity.read']);
    const other = await h.make.subuser(server, ['activity.read']);
    const now = h.clock.now();
    await record(server, 'server:test.owner', by(owner, '198.51.100.1'), now);
    await record(server, 'server:test.sub', by(sub, '198.51.100.2'), now + 1);

    const ips = async (who: UserWithToken) => (await both(who, server, 'sort=timestamp')).data.map((d) => d.attributes.ip);
    expect(await ips(owner)).toEqual(['198.51.100.1', '198.51.100.2']);
    expect(await ips(sub)).toEqual([null, '198.51.100.2']);
    expect(await ips(other)).toEqual([null, null]);
    expect(await ips(owner)).toEqual(['198.51.100.1', '198.51.100.2']);
  });

  it('renders every request when the users generation row is gone, rather than failing', async () => {
    const { owner, server } = await h.make.ownedServer();
    const actor = await h.make.user();
    await record(server, 'server:test.one', by(actor, '203.0.113.4'), h.clock.now());
    expect((await both(owner, server)).meta.pagination.total).toBe(1);
    await sql`delete from change_generations where name = 'users'`.execute(h.db.db);
    try {
      await sql`update users set username = ${'gone_' + actor.user.id} where id = ${actor.user.id}`.execute(h.db.db);
      const listing = await both(owner, server);
      expect(listing.data[0]!.attributes.relationships.actor.attributes!.username).toBe(`gone_${actor.user.id}`);
    } finally {
      await sql`insert into change_generations (name, generation) values ('users', 1000)`.execute(h.db.db);
    }
  });

  it('serves errors uncached and the listing again once the request is valid', async () => {
    const { owner, server } = await h.make.ownedServer();
    await record(server, 'server:test.one', SYSTEM_ACTOR, h.clock.now());
    const bad = await h.app.inject({ method: 'GET', url: url(server, 'sort=sideways'), headers: headers(owner) });
    expect(bad.statusCode).toBe(400);
    expect((await both(owner, server)).meta.pagination.total).toBe(1);
  });
});

describe('ListingCache', () => {
  it('answers only for the version a listing was stored with', () => {
    const cache = new ListingCache(1000);
    cache.set('a', 'v1', 'body-a');
    expect(cache.get('a', 'v1')).toBe('body-a');
    expect(cache.get('a', 'v2')).toBeUndefined();
    // A stale listing is dropped, not kept.
    expect(cache.get('a', 'v1')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('holds at most its budget, dropping the least recently used first', () => {
    const cache = new ListingCache(30);
    cache.set('a', 'v', 'x'.repeat(9)); // 10 characters with the key
    cache.set('b', 'v', 'x'.repeat(9));
    cache.set('c', 'v', 'x'.repeat(9));
    expect(cache.size).toBe(30);
    expect(cache.get('a', 'v')).toBeDefined(); // a is now the most recent
    cache.set('d', 'v', 'x'.repeat(9));
    expect(cache.get('b', 'v')).toBeUndefined();
    expect(cache.get('a', 'v')).toBeDefined();
    expect(cache.get('c', 'v')).toBeDefined();
    expect(cache.get('d', 'v')).toBeDefined();
    expect(cache.size).toBe(30);
    // Replacing a listing counts it once; one larger than the whole budget is not kept.
    cache.set('d', 'w', 'x'.repeat(4));
    expect(cache.size).toBe(25);
    cache.set('e', 'v', 'x'.repeat(40));
    expect(cache.get('e', 'v')).toBeUndefined();
    expect(cache.size).toBe(25);
  });

  it('is off with a budget of zero', () => {
    const cache = new ListingCache(0);
    expect(cache.enabled).toBe(false);
    cache.set('a', 'v', 'b');
    expect(cache.get('a', 'v')).toBeUndefined();
  });
});
