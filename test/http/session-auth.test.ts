import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness, type Harness } from '../helpers/harness.js';
import { browserRequest, signIn, userWithPassword } from '../helpers/sign-in.js';

/** docs/reference/web-console.md: the client API accepts a signed-in browser's session as it accepts a bearer key, with a CSRF token for changes. */

async function ownerSignedIn(h: Harness) {
  const owner = await userWithPassword(h);
  const server = await h.make.server(owner.user);
  const session = await signIn(h, owner.user.username, owner.password);
  return { owner, server, session };
}

describeEachDatabase('the client API with a session cookie', (database) => {
  const h = useHarness(database);

  const schedules = (serverId: number) =>
    h.db.db.selectFrom('schedules').select(['id', 'name']).where('server_id', '=', serverId).execute();
  const entries = (serverId: number) =>
    h.db.db
      .selectFrom('activity_logs')
      .select(['event', 'actor_id', 'api_key_id'])
      .where('server_id', '=', serverId)
      .orderBy('id')
      .execute();

  it('reads with the cookie alone: no CSRF token needed for GET', async () => {
    const { owner, server, session } = await ownerSignedIn(h);
    const list = await browserRequest(h, session, { method: 'GET', url: '/api/client' });
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((s: any) => s.attributes.uuid)).toEqual([server.uuid]);
    expect(
      (await browserRequest(h, session, { method: 'GET', url: `/api/client/servers/${server.uuid_short}` })).statusCode,
    ).toBe(200);
    const account = await browserRequest(h, session, { method: 'GET', url: '/api/client/account' });
    expect(account.json().attributes.username).toBe(owner.user.username);
    // Permissions and visibility are the user's, as with a key.
    const stranger = await userWithPassword(h);
    const theirs = await signIn(h, stranger.user.username, stranger.password);
    expect((await browserRequest(h, theirs, { method: 'GET', url: `/api/client/servers/${server.uuid_short}` })).statusCode).toBe(
      404,
    );
  });

  it('refuses a change without the CSRF token (403) before anything runs: no row, no activity entry', async () => {
    const { server, session } = await ownerSignedIn(h);
    const other = await signIn(h, (await userWithPassword(h)).user.username, 'correct horse battery');
    const url = `/api/client/servers/${server.uuid_short}/schedules`;
    for (const csrf of [undefined, '', other.csrf, `${session.csrf}x`, session.csrf.slice(1)]) {
      const res = await browserRequest(h, session, {
        method: 'POST',
        url,
        payload: { name: 'Nightly' },
        ...(csrf === undefined ? {} : { csrf }),
      });
      expect(res.statusCode, String(csrf)).toBe(403);
      expect(res.json()).toEqual({
        errors: [{ code: 'AccessDeniedHttpException', status: '403', detail: 'CSRF token mismatch.' }],
      });
    }
    // Before validation too: an invalid body without the token is still a 403.
    expect((await browserRequest(h, session, { method: 'POST', url, payload: { name: '' } })).statusCode).toBe(403);
    expect(await schedules(server.id)).toEqual([]);
    expect(await entries(server.id)).toEqual([]);
  });

  it('refuses PUT, PATCH and DELETE without the token too, and changes nothing', async () => {
    const { owner, server, session } = await ownerSignedIn(h);
    const created = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid_short}/schedules`,
      payload: { name: 'Keep me' },
    });
    const id = created.json().attributes.id as number;
    const url = `/api/client/servers/${server.uuid_short}/schedules/${id}`;
    for (const method of ['PUT', 'PATCH', 'POST'] as const) {
      expect((await browserRequest(h, session, { method, url, payload: { name: 'Changed' } })).statusCode, method).toBe(403);
    }
    expect((await browserRequest(h, session, { method: 'DELETE', url })).statusCode).toBe(403);
    expect(await schedules(server.id)).toEqual([{ id, name: 'Keep me' }]);
    expect((await entries(server.id)).map((e) => e.event)).toEqual(['server:schedule.create']);
  });

  it('makes the change with the token, logged as the user with no API key', async () => {
    const { owner, server, session } = await ownerSignedIn(h);
    const res = await browserRequest(h, session, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid_short}/schedules`,
      payload: { name: 'Nightly' },
      csrf: session.csrf,
    });
    expect(res.statusCode).toBe(200);
    expect((await schedules(server.id)).map((s) => s.name)).toEqual(['Nightly']);
    expect(await entries(server.id)).toEqual([{ event: 'server:schedule.create', actor_id: owner.user.id, api_key_id: null }]);
    const activity = await browserRequest(h, session, {
      method: 'GET',
      url: `/api/client/servers/${server.uuid_short}/activity`,
    });
    expect(activity.json().data[0].attributes).toMatchObject({ event: 'server:schedule.create', is_api: false });
  });

  it('lets a bearer token win: it works alone, beside a bad cookie, and a bad one is refused whatever the cookie', async () => {
    const { owner, server, session } = await ownerSignedIn(h);
    const url = `/api/client/servers/${server.uuid_short}`;
    expect((await h.request(owner.token, { method: 'GET', url })).statusCode).toBe(200);
    const withBadCookie = await h.request(owner.token, {
      method: 'GET',
      url,
      headers: { cookie: `quetzal_session=${'B'.repeat(43)}` },
    });
    expect(withBadCookie.statusCode).toBe(200);
    // A change by key needs no CSRF token, even beside a (good) cookie.
    const change = await h.request(owner.token, {
      method: 'POST',
      url: `${url}/schedules`,
      payload: { name: 'By key' },
      headers: { cookie: session.cookie },
    });
    expect(change.statusCode).toBe(200);
    expect((await entries(server.id))[0]!.api_key_id).toEqual(expect.any(Number));
    expect(
      (
        await h.request('ptlc_NotARealKey0000000000000000000000000000000000', {
          method: 'GET',
          url,
          headers: { cookie: session.cookie },
        })
      ).statusCode,
    ).toBe(401);
    expect(
      (await h.app.inject({ method: 'GET', url, headers: { cookie: session.cookie, authorization: 'Basic eDp5' } })).statusCode,
    ).toBe(401);
  });

  it('answers 401 for no cookie, a forged one, or the session of a deleted user', async () => {
    const { owner, server, session } = await ownerSignedIn(h);
    const url = `/api/client/servers/${server.uuid_short}`;
    expect((await h.app.inject({ method: 'GET', url })).statusCode).toBe(401);
    for (const cookie of [
      'quetzal_session=',
      'quetzal_session=short',
      `quetzal_session=${'C'.repeat(43)}`,
      `other=${session.token}`,
    ]) {
      expect((await h.app.inject({ method: 'GET', url, headers: { cookie } })).statusCode, cookie).toBe(401);
    }
    await h.db.db.deleteFrom('servers').where('id', '=', server.id).execute();
    await h.db.db.deleteFrom('users').where('id', '=', owner.user.id).execute();
    expect((await browserRequest(h, session, { method: 'GET', url: '/api/client/account' })).statusCode).toBe(401);
  });

  it('ends at sign-out: the next request with the same cookie is a 401', async () => {
    const { server, session } = await ownerSignedIn(h);
    const url = `/api/client/servers/${server.uuid_short}`;
    expect((await browserRequest(h, session, { method: 'GET', url })).statusCode).toBe(200);
    expect((await browserRequest(h, session, { method: 'POST', url: '/auth/logout', csrf: session.csrf })).statusCode).toBe(204);
    expect((await browserRequest(h, session, { method: 'GET', url })).statusCode).toBe(401);
    expect(
      (await browserRequest(h, session, { method: 'POST', url: `${url}/schedules`, payload: { name: 'x' }, csrf: session.csrf }))
        .statusCode,
    ).toBe(401);
  });
});

describeEachDatabase('the per-user rate limit with a session cookie', (database) => {
  const h = useHarness(database, { RATE_LIMIT_PER_MINUTE: '3' });

  it('counts session requests with the user’s key requests, and answers 429 past the budget', async () => {
    const owner = await userWithPassword(h);
    const session = await signIn(h, owner.user.username, owner.password);
    expect(
      (await browserRequest(h, session, { method: 'GET', url: '/api/client/account' })).headers['x-ratelimit-remaining'],
    ).toBe('2');
    expect((await h.request(owner.token, { method: 'GET', url: '/api/client/account' })).headers['x-ratelimit-remaining']).toBe(
      '1',
    );
    expect((await browserRequest(h, session, { method: 'GET', url: '/api/client/account' })).statusCode).toBe(200);
    const refused = await browserRequest(h, session, { method: 'GET', url: '/api/client/account' });
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });
});
