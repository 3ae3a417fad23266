import { randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { recordActivity, SYSTEM_ACTOR, type Actor } from '../../src/modules/activity/activity.recorder.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import type { UserWithToken } from '../helpers/factories.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;
const T0 = Date.parse('2026-03-01T12:00:00Z');

describeEachDatabase('activity listing', (database) => {
  const h = useHarness(database);

  const by = (who: UserWithToken, ip: string): Actor => ({ userId: who.user.id, apiKeyId: 1, ip });
  async function record(
    server: ServerRow,
    event: string,
    actor: Actor,
    extra: { properties?: Record<string, unknown>; at?: number; batch?: string; description?: string } = {},
  ) {
    await recordActivity(h.db.db, {
      serverId: server.id,
      event,
      actor,
      properties: extra.properties ?? {},
      timestamp: extra.at ?? T0,
      ...(extra.batch ? { batch: extra.batch } : {}),
      ...(extra.description ? { description: extra.description } : {}),
    });
  }
  const url = (server: ServerRow, query = '') => `/api/client/servers/${server.uuid_short}/activity${query ? `?${query}` : ''}`;
  async function get(token: string, server: ServerRow, query = '') {
    return h.request(token, { method: 'GET', url: url(server, query) });
  }
  async function events(token: string, server: ServerRow, query = ''): Promise<string[]> {
    const res = await get(token, server, query);
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data.map((d: { attributes: { event: string } }) => d.attributes.event);
  }

  it('answers the activity_log shape, with the actor beside and inside the attributes', async () => {
    const { owner, server } = await h.make.ownedServer();
    const batch = randomUUID();
    await record(server, 'server:schedule.create', by(owner, '203.0.113.9'), {
      properties: { name: 'Nightly' },
      batch,
      description: 'made it',
    });
    await record(server, 'server:power.start', SYSTEM_ACTOR, { at: T0 + 1000 });

    const res = await get(owner.token, server);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.object).toBe('list');
    expect(body.data).toHaveLength(2);
    const [system, user] = body.data;

    expect(system.object).toBe('activity_log');
    expect(system.attributes).toMatchObject({
      batch: null,
      event: 'server:power.start',
      is_api: false,
      ip: null,
      description: null,
      properties: {},
      has_additional_metadata: false,
      timestamp: '2026-03-01T12:00:01+00:00',
    });
    expect(system.relationships).toEqual({ actor: { object: 'null_resource', attributes: null } });
    expect(system.attributes.relationships).toEqual(system.relationships);
    // {} on the wire, never [].
    expect(res.body).toContain('"properties":{}');

    expect(user.attributes).toMatchObject({
      batch,
      event: 'server:schedule.create',
      is_api: true,
      ip: '203.0.113.9',
      description: 'made it',
      properties: { name: 'Nightly' },
      has_additional_metadata: false,
    });
    expect(user.attributes.timestamp).toMatch(ISO);
    expect(typeof user.attributes.id).toBe('string');
    expect(user.attributes.id).not.toBe(system.attributes.id);
    const actor = user.relationships.actor;
    expect(actor.object).toBe('user');
    expect(Object.keys(actor.attributes).sort()).toEqual(['2fa_enabled', 'created_at', 'email', 'image', 'username', 'uuid']);
    expect(actor.attributes).toMatchObject({
      uuid: owner.user.uuid,
      username: owner.user.username,
      email: owner.user.email,
      '2fa_enabled': false,
    });
    expect(actor.attributes.created_at).toMatch(ISO);
    expect(actor.attributes.image).toMatch(/^https:\/\/gravatar\.com\/avatar\/[0-9a-f]{32}$/);
    expect(user.attributes.relationships).toEqual(user.relationships);

    // include=actor is accepted and changes nothing; the full UUID addresses the server too.
    const withInclude = await h.request(owner.token, {
      method: 'GET',
      url: `/api/client/servers/${server.uuid}/activity?include=actor`,
    });
    expect(withInclude.statusCode).toBe(200);
    expect(withInclude.json().data).toEqual(body.data);
  });

  it('reads stored [] properties as {} and flags keys the event does not list', async () => {
    const { owner, server } = await h.make.ownedServer();
    const actor = by(owner, '10.0.0.1');
    await record(server, 'server:backup.start', actor, { properties: { name: 'b', locked: false } });
    await record(server, 'server:backup.start', actor, { properties: { name: 'b', locked: false, extra: 1 }, at: T0 + 1 });
    await record(server, 'server:backup.delete', actor, {
      properties: { name: 'b', failed: true, ip: '1.2.3.4', useragent: 'x', using_sftp: true },
      at: T0 + 2,
    });
    await record(server, 'server:power.kill', actor, { properties: { name: 'unlisted' }, at: T0 + 3 });
    await record(server, 'server:custom.event', actor, { properties: { anything: true }, at: T0 + 4 });
    await record(server, 'server:power.stop', actor, { at: T0 + 5 });
    await h.db.db
      .updateTable('activity_logs')
      .set({ properties: '[]' })
      .where('server_id', '=', server.id)
      .where('event', '=', 'server:power.stop')
      .execute();

    const res = await get(owner.token, server, 'sort=timestamp');
    const data = res
      .json()
      .data.map((d: { attributes: { event: string; has_additional_metadata: boolean; properties: object } }) => [
        d.attributes.event,
        d.attributes.has_additional_metadata,
        d.attributes.properties,
      ]);
    expect(data).toEqual([
      ['server:backup.start', false, { name: 'b', locked: false }],
      ['server:backup.start', true, { name: 'b', locked: false, extra: 1 }],
      ['server:backup.delete', false, { name: 'b', failed: true, ip: '1.2.3.4', useragent: 'x', using_sftp: true }],
      ['server:power.kill', true, { name: 'unlisted' }],
      ['server:custom.event', true, { anything: true }],
      ['server:power.stop', false, {}],
    ]);
  });

  it('paginates with exact meta and absolute links that keep the other parameters', async () => {
    const { owner, server } = await h.make.ownedServer();
    for (let i = 0; i < 7; i++) await record(server, `server:test.e${i}`, by(owner, '10.0.0.1'), { at: T0 + i * 1000 });

    const first = (await get(owner.token, server, 'per_page=3&filter[event]=test&sort=-timestamp')).json();
    expect(first.data.map((d: { attributes: { event: string } }) => d.attributes.event)).toEqual([
      'server:test.e6',
      'server:test.e5',
      'server:test.e4',
    ]);
    const base = `http://quetzal.test/api/client/servers/${server.uuid_short}/activity`;
    expect(first.meta.pagination).toEqual({
      total: 7,
      count: 3,
      per_page: 3,
      current_page: 1,
      total_pages: 3,
      links: { next: `${base}?per_page=3&filter%5Bevent%5D=test&sort=-timestamp&page=2` },
    });
    const middle = (await get(owner.token, server, 'per_page=3&page=2')).json().meta.pagination;
    expect(middle).toMatchObject({
      count: 3,
      current_page: 2,
      links: { previous: `${base}?per_page=3&page=1`, next: `${base}?per_page=3&page=3` },
    });
    const last = await get(owner.token, server, 'per_page=3&page=3');
    expect(last.json().data.map((d: { attributes: { event: string } }) => d.attributes.event)).toEqual(['server:test.e0']);
    expect(last.json().meta.pagination).toMatchObject({
      total: 7,
      count: 1,
      current_page: 3,
      total_pages: 3,
      links: { previous: `${base}?per_page=3&page=2` },
    });
    expect(last.json().meta.pagination.links.next).toBeUndefined();

    const past = (await get(owner.token, server, 'per_page=3&page=9')).json();
    expect(past.data).toEqual([]);
    expect(past.meta.pagination).toEqual({
      total: 7,
      count: 0,
      per_page: 3,
      current_page: 9,
      total_pages: 3,
      links: { previous: `${base}?per_page=3&page=8` },
    });

    const single = (await get(owner.token, server)).json().meta.pagination;
    expect(single).toEqual({ total: 7, count: 7, per_page: 25, current_page: 1, total_pages: 1, links: {} });

    const { owner: other, server: empty } = await h.make.ownedServer();
    const none = (await get(other.token, empty)).json();
    expect(none.data).toEqual([]);
    expect(none.meta.pagination).toEqual({ total: 0, count: 0, per_page: 25, current_page: 1, total_pages: 1, links: {} });
    const noMatch = (await get(owner.token, server, 'filter[event]=nothing-like-this')).json();
    expect(noMatch.meta.pagination).toMatchObject({ total: 0, count: 0, total_pages: 1, links: {} });

    const max = (await get(owner.token, server, 'per_page=100')).json().meta.pagination;
    expect(max).toMatchObject({ per_page: 100, count: 7 });
  });

  it('sorts by timestamp both ways and breaks ties by insertion', async () => {
    const { owner, server } = await h.make.ownedServer();
    const actor = by(owner, '10.0.0.1');
    await record(server, 'server:test.a', actor, { at: T0 });
    await record(server, 'server:test.b', actor, { at: T0 + 5000 });
    await record(server, 'server:test.c', actor, { at: T0 + 5000 });
    await record(server, 'server:test.d', actor, { at: T0 + 5000 });
    await record(server, 'server:test.e', actor, { at: T0 + 9000 });
    expect(await events(owner.token, server)).toEqual([
      'server:test.e',
      'server:test.d',
      'server:test.c',
      'server:test.b',
      'server:test.a',
    ]);
    expect(await events(owner.token, server, 'sort=-timestamp')).toEqual([
      'server:test.e',
      'server:test.d',
      'server:test.c',
      'server:test.b',
      'server:test.a',
    ]);
    expect(await events(owner.token, server, 'sort=timestamp')).toEqual([
      'server:test.a',
      'server:test.b',
      'server:test.c',
      'server:test.d',
      'server:test.e',
    ]);
    // Stable across pages: the ties split over two pages in insertion order.
    expect(await events(owner.token, server, 'sort=timestamp&per_page=2&page=2')).toEqual(['server:test.c', 'server:test.d']);
    expect(await events(owner.token, server, 'per_page=2&page=2')).toEqual(['server:test.c', 'server:test.b']);
  });

  it("stores an entry stamped before its predecessor at the predecessor's time, keeping insertion order", async () => {
    const { owner, server } = await h.make.ownedServer();
    await record(server, 'server:test.later', SYSTEM_ACTOR, { at: T0 + 60_000 });
    await record(server, 'server:test.earlier', SYSTEM_ACTOR, { at: T0 });
    const res = (await get(owner.token, server, 'sort=timestamp')).json();
    expect(
      res.data.map((d: { attributes: { event: string; timestamp: string } }) => [d.attributes.event, d.attributes.timestamp]),
    ).toEqual([
      ['server:test.later', '2026-03-01T12:01:00+00:00'],
      ['server:test.earlier', '2026-03-01T12:01:00+00:00'],
    ]);
  });

  it('filters events by case-insensitive substring, with %, _ and \\ taken literally', async () => {
    const { owner, server } = await h.make.ownedServer();
    const names = [
      'server:test.a_b',
      'server:test.aXb',
      'server:test.100%',
      'server:test.1000',
      'server:test.back\\slash',
      'server:test.backslash',
      'server:schedule.create',
    ];
    for (const [i, name] of names.entries()) await record(server, name, SYSTEM_ACTOR, { at: T0 + i });
    const q = (v: string) => `sort=timestamp&filter[event]=${encodeURIComponent(v)}`;
    expect(await events(owner.token, server, q('a_b'))).toEqual(['server:test.a_b']);
    expect(await events(owner.token, server, q('_'))).toEqual(['server:test.a_b']);
    expect(await events(owner.token, server, q('100%'))).toEqual(['server:test.100%']);
    expect(await events(owner.token, server, q('%'))).toEqual(['server:test.100%']);
    expect(await events(owner.token, server, q('\\'))).toEqual(['server:test.back\\slash']);
    expect(await events(owner.token, server, q('k\\s'))).toEqual(['server:test.back\\slash']);
    expect(await events(owner.token, server, q('SCHEDULE.Cr'))).toEqual(['server:schedule.create']);
    expect(await events(owner.token, server, q('TEST.A'))).toEqual(['server:test.a_b', 'server:test.aXb']);
    expect(await events(owner.token, server, q('server:'))).toHaveLength(names.length);
    expect(await events(owner.token, server, q('nope'))).toEqual([]);
    // Surrounding spaces are trimmed, an empty value filters nothing.
    expect(await events(owner.token, server, `sort=timestamp&filter[event]=%20a_b%20`)).toEqual(['server:test.a_b']);
    expect(await events(owner.token, server, 'filter[event]=')).toHaveLength(names.length);
  });

  it('filters IPs by case-insensitive substring, literally, and actors by UUID or system', async () => {
    const { owner, server } = await h.make.ownedServer();
    const other = await h.make.subuser(server, ['activity.read']);
    await record(server, 'server:test.v4', by(owner, '192.168.1.10'), { at: T0 });
    await record(server, 'server:test.v6', by(owner, 'FE80::A1B2'), { at: T0 + 1 });
    await record(server, 'server:test.sub', by(other, '10.1_0.0.1'), { at: T0 + 2 });
    await record(server, 'server:test.system', SYSTEM_ACTOR, { at: T0 + 3 });
    const q = (f: string) => `sort=timestamp&${f}`;
    expect(await events(owner.token, server, q('filter[ip]=192.168.'))).toEqual(['server:test.v4']);
    expect(await events(owner.token, server, q('filter[ip]=fe80::a1'))).toEqual(['server:test.v6']);
    expect(await events(owner.token, server, q('filter[ip]=a1B2'))).toEqual(['server:test.v6']);
    expect(await events(owner.token, server, q('filter[ip]=.1'))).toEqual(['server:test.v4', 'server:test.sub']);
    expect(await events(owner.token, server, q('filter[ip]=1_0'))).toEqual(['server:test.sub']);
    expect(await events(owner.token, server, q('filter[ip]=%25'))).toEqual([]);
    expect(await events(owner.token, server, q('filter[ip]=_'))).toEqual(['server:test.sub']);

    expect(await events(owner.token, server, q(`filter[actor_id]=${owner.user.uuid}`))).toEqual([
      'server:test.v4',
      'server:test.v6',
    ]);
    expect(await events(owner.token, server, q(`filter[actor_id]=${other.user.uuid.toUpperCase()}`))).toEqual([
      'server:test.sub',
    ]);
    expect(await events(owner.token, server, q('filter[actor_id]=system'))).toEqual(['server:test.system']);
    expect(await events(owner.token, server, q(`filter[actor_id]=${randomUUID()}`))).toEqual([]);

    // Filters combine with AND.
    expect(await events(owner.token, server, q(`filter[actor_id]=${owner.user.uuid}&filter[ip]=fe80`))).toEqual([
      'server:test.v6',
    ]);
    expect(await events(owner.token, server, q(`filter[actor_id]=${owner.user.uuid}&filter[event]=v4&filter[ip]=192`))).toEqual([
      'server:test.v4',
    ]);
    expect(await events(owner.token, server, q(`filter[actor_id]=system&filter[event]=v4`))).toEqual([]);
    const combined = (await get(owner.token, server, q('filter[event]=test&filter[ip]=1'))).json();
    expect(combined.meta.pagination.total).toBe(3);
  });

  it("shows IPs only to the entry's actor, the owner and root admins; filter[ip] matches only visible IPs", async () => {
    const { owner, server } = await h.make.ownedServer();
    const sub = await h.make.subuser(server, ['activity.read']);
    const admin = await h.make.user({ admin: true });
    await record(server, 'server:test.owner', by(owner, '198.51.100.7'), {
      properties: { ip: '198.51.100.7', name: 'x' },
      at: T0,
    });
    await record(server, 'server:test.sub', by(sub, '198.51.100.8'), { properties: { ip: '198.51.100.8' }, at: T0 + 1 });
    await record(server, 'server:test.system', SYSTEM_ACTOR, { at: T0 + 2 });

    const view = async (who: UserWithToken, query = 'sort=timestamp') =>
      (await get(who.token, server, query))
        .json()
        .data.map((d: { attributes: { event: string; ip: string | null; properties: { ip?: string } } }) => [
          d.attributes.event,
          d.attributes.ip,
          d.attributes.properties.ip ?? null,
        ]);
    expect(await view(owner)).toEqual([
      ['server:test.owner', '198.51.100.7', '198.51.100.7'],
      ['server:test.sub', '198.51.100.8', '198.51.100.8'],
      ['server:test.system', null, null],
    ]);
    expect(await view(admin)).toEqual(await view(owner));
    expect(await view(sub)).toEqual([
      ['server:test.owner', null, '[hidden]'],
      ['server:test.sub', '198.51.100.8', '198.51.100.8'],
      ['server:test.system', null, null],
    ]);

    // The subuser's IP filter only reaches their own entries, even where another's IP would match.
    expect(await view(sub, 'filter[ip]=198.51.100')).toEqual([['server:test.sub', '198.51.100.8', '198.51.100.8']]);
    expect(await view(sub, 'filter[ip]=198.51.100.7')).toEqual([]);
    expect(await view(sub, `filter[ip]=198&filter[actor_id]=${owner.user.uuid}`)).toEqual([]);
    expect(await view(sub, `filter[ip]=198&filter[actor_id]=${sub.user.uuid}`)).toHaveLength(1);
    expect((await get(sub.token, server, 'filter[ip]=198')).json().meta.pagination.total).toBe(1);
    // Other filters are not limited by IP visibility.
    expect(await view(sub, `filter[actor_id]=${owner.user.uuid}`)).toEqual([['server:test.owner', null, '[hidden]']]);
    expect(await view(owner, 'filter[ip]=198.51.100')).toHaveLength(2);
    expect(await view(admin, 'filter[ip]=198.51.100.7')).toHaveLength(1);
  });

  it("needs activity.read (403), hides other tenants' servers (404) and checks permission before the query", async () => {
    const { owner, server } = await h.make.ownedServer();
    await record(server, 'server:test.x', SYSTEM_ACTOR);
    const without = await h.make.subuser(server, ['schedule.read']);
    const stranger = await h.make.user();

    const denied = await get(without.token, server);
    expect(denied.statusCode).toBe(403);
    expect(denied.json().errors[0]).toMatchObject({ code: 'AccessDeniedHttpException', status: '403' });
    expect((await get(without.token, server, 'per_page=0&sort=bad')).statusCode).toBe(403);

    const hidden = await get(stranger.token, server);
    expect(hidden.statusCode).toBe(404);
    expect(hidden.json().errors[0]).toMatchObject({ code: 'NotFoundHttpException', status: '404' });
    expect((await h.request(owner.token, { method: 'GET', url: '/api/client/servers/deadbeef/activity' })).statusCode).toBe(404);
    expect((await h.request(null, { method: 'GET', url: url(server) })).statusCode).toBe(401);
    expect((await h.request(owner.token, { method: 'POST', url: url(server) })).statusCode).toBe(405);
  });

  it('rejects bad sorts and filters with 400 and bad values with 422', async () => {
    const { owner, server } = await h.make.ownedServer();
    await record(server, 'server:test.x', SYSTEM_ACTOR);
    const expectError = async (query: string, status: number, code: string, meta?: object) => {
      const res = await get(owner.token, server, query);
      expect(res.statusCode, query).toBe(status);
      const error = res.json().errors[0];
      expect(error, query).toMatchObject({ code, status: String(status) });
      if (meta)
        expect(
          res.json().errors.map((e: { meta: object }) => e.meta),
          query,
        ).toContainEqual(meta);
    };
    await expectError('sort=name', 400, 'InvalidSortQuery');
    await expectError('sort=-id', 400, 'InvalidSortQuery');
    await expectError('sort[]=timestamp', 400, 'InvalidSortQuery');
    await expectError('sort=timestamp,-timestamp', 400, 'InvalidSortQuery');
    await expectError('filter[name]=x', 400, 'InvalidFilterQuery');
    await expectError('filter[event]=x&filter[properties]=y', 400, 'InvalidFilterQuery');
    await expectError('filter=event', 400, 'BadRequestHttpException');
    await expectError('filter[]=event', 400, 'BadRequestHttpException');

    await expectError('filter[event][]=a', 422, 'ValidationException', { source_field: 'filter.event', rule: 'string' });
    await expectError('filter[ip][x]=a', 422, 'ValidationException', { source_field: 'filter.ip', rule: 'string' });
    await expectError('filter[event]=a&filter[event]=b', 422, 'ValidationException', {
      source_field: 'filter.event',
      rule: 'string',
    });
    await expectError('filter[actor_id]=12', 422, 'ValidationException', { source_field: 'filter.actor_id', rule: 'uuid' });
    await expectError('filter[actor_id]=not-a-uuid', 422, 'ValidationException', {
      source_field: 'filter.actor_id',
      rule: 'uuid',
    });
    await expectError('filter[event]=a%00b', 422, 'ValidationException', { source_field: 'filter.event', rule: 'regex' });
    await expectError('per_page=0', 422, 'ValidationException', { source_field: 'per_page', rule: 'min' });
    await expectError('per_page=101', 422, 'ValidationException', { source_field: 'per_page', rule: 'max' });
    await expectError('per_page=abc', 422, 'ValidationException', { source_field: 'per_page', rule: 'integer' });
    await expectError('per_page=2.5', 422, 'ValidationException', { source_field: 'per_page', rule: 'integer' });
    await expectError('per_page[]=2', 422, 'ValidationException', { source_field: 'per_page', rule: 'integer' });
    await expectError('page=0', 422, 'ValidationException', { source_field: 'page', rule: 'min' });
    await expectError('page=-3', 422, 'ValidationException', { source_field: 'page', rule: 'min' });
    await expectError('page=x', 422, 'ValidationException', { source_field: 'page', rule: 'integer' });
    await expectError('page=99999999999999999999', 422, 'ValidationException');

    // Huge but valid pages are simply past the end.
    const far = await get(owner.token, server, `page=${Number.MAX_SAFE_INTEGER}&per_page=100`);
    expect(far.statusCode).toBe(200);
    expect(far.json()).toMatchObject({ data: [], meta: { pagination: { total: 1, current_page: Number.MAX_SAFE_INTEGER } } });
    // Unknown top-level parameters and includes are ignored.
    expect((await get(owner.token, server, 'include=actor,unknown&foo=bar')).statusCode).toBe(200);
  });

  it('lists the entries the API itself writes, and documents the route in OpenAPI', async () => {
    const { owner, server } = await h.make.ownedServer();
    const created = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid}/schedules`,
      payload: { name: 'From the API' },
    });
    expect(created.statusCode).toBe(200);
    const body = (await get(owner.token, server)).json();
    expect(body.data).toHaveLength(1);
    expect(body.data[0].attributes).toMatchObject({
      event: 'server:schedule.create',
      is_api: true,
      ip: '127.0.0.1',
      properties: { name: 'From the API' },
      has_additional_metadata: false,
    });
    expect(body.data[0].relationships.actor.attributes.uuid).toBe(owner.user.uuid);

    const openapi = (await h.request(owner.token, { method: 'GET', url: '/api/client/openapi.json' })).json();
    const op = openapi.paths['/api/client/servers/{server}/activity'].get;
    expect(op).toBeDefined();
    expect(op.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['page', 'per_page', 'sort', 'filter[event]', 'filter[ip]', 'filter[actor_id]']),
    );
  });

  describeDeepPaging();

  function describeDeepPaging() {
    let owner: UserWithToken;
    let server: ServerRow;
    const N = 240;
    beforeAll(async () => {
      ({ owner, server } = await h.make.ownedServer());
      const entries = [];
      for (let i = 0; i < N; i++) {
        entries.push({
          serverId: server.id,
          event: i % 3 === 0 ? 'server:backup.start' : i % 3 === 1 ? 'server:schedule.run' : 'server:power.start',
          actor: i % 4 === 0 ? SYSTEM_ACTOR : by(owner, `10.0.${i % 7}.1`),
          timestamp: T0 + Math.floor(i / 5) * 1000,
        });
      }
      const { recordActivities } = await import('../../src/modules/activity/activity.recorder.js');
      await recordActivities(h.db.db, entries);
    });

    it('pages deep into filtered listings with the same rows as offset paging', async () => {
      const all = async (query: string) => {
        const out: string[] = [];
        for (let page = 1; ; page++) {
          const body = (await get(owner.token, server, `${query}&per_page=7&page=${page}`)).json();
          out.push(...body.data.map((d: { attributes: { id: string } }) => d.attributes.id));
          if (page >= body.meta.pagination.total_pages) {
            expect(out).toHaveLength(body.meta.pagination.total);
            return out;
          }
        }
      };
      const full = await all('sort=timestamp');
      expect(full).toHaveLength(N);
      expect(await all('sort=-timestamp')).toEqual([...full].reverse());
      const backups = await all('sort=timestamp&filter[event]=backup');
      expect(backups).toHaveLength(N / 3);
      const system = await all('sort=-timestamp&filter[actor_id]=system');
      expect(system).toHaveLength(N / 4);
      const combo = await all(`sort=timestamp&filter[ip]=10.0.3&filter[event]=run`);
      expect(combo.length).toBeGreaterThan(0);
    });
  }
});
