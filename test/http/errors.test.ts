import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

describeEachDatabase('error handling', (database) => {
  const h = useHarness(database);

  const schedulesUrl = async () => {
    const { owner, server } = await h.make.ownedServer();
    return { token: owner.token, url: `/api/client/servers/${server.uuid}/schedules`, server };
  };

  it('malformed JSON is a 400 BadRequestHttpException', async () => {
    const { token, url } = await schedulesUrl();
    const res = await h.request(token, {
      method: 'POST',
      url,
      payload: '{"name": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ errors: [{ code: 'BadRequestHttpException', status: '400', detail: expect.any(String) }] });
  });

  it('a body that is not an object is a 400', async () => {
    const { token, url } = await schedulesUrl();
    for (const payload of ['[]', '"name"', '5', 'null', 'true']) {
      const res = await h.request(token, { method: 'POST', url, payload, headers: { 'content-type': 'application/json' } });
      expect(res.statusCode, payload).toBe(400);
      expect(res.json().errors[0].code).toBe('BadRequestHttpException');
    }
  });

  it('a body with no Content-Type is read as JSON; another type is a 415', async () => {
    const { token, url } = await schedulesUrl();
    const plain = await h.request(token, { method: 'POST', url, payload: '{"name":"x"}', headers: { 'content-type': '' } });
    expect(plain.statusCode).toBe(200);
    const vendor = await h.request(token, {
      method: 'POST',
      url,
      payload: '{"name":"x"}',
      headers: { 'content-type': 'application/vnd.api+json' },
    });
    expect(vendor.statusCode).toBe(200);
    const form = await h.request(token, {
      method: 'POST',
      url,
      payload: 'name=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.statusCode).toBe(415);
    expect(form.json().errors[0]).toMatchObject({ code: 'UnsupportedMediaTypeHttpException', status: '415' });
  });

  it('a body over 1 MiB is a 413', async () => {
    const { token, url } = await schedulesUrl();
    const res = await h.request(token, {
      method: 'POST',
      url,
      payload: JSON.stringify({ name: 'x', pad: 'a'.repeat(1024 * 1024) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(413);
    expect(res.json().errors[0]).toMatchObject({ code: 'PayloadTooLargeHttpException', status: '413' });
  });

  it('unknown routes are 404 and known paths with the wrong method are 405', async () => {
    const { token, server } = await schedulesUrl();
    const unknown = await h.request(token, { method: 'GET', url: '/api/client/nope' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().errors[0]).toMatchObject({ code: 'NotFoundHttpException', status: '404' });
    const wrong = await h.request(token, { method: 'DELETE', url: `/api/client/servers/${server.uuid}/schedules` });
    expect(wrong.statusCode).toBe(405);
    expect(wrong.json().errors[0]).toMatchObject({ code: 'MethodNotAllowedHttpException', status: '405' });
  });

  it('wrong types are 422 with one entry per failed rule, and never a 500', async () => {
    const { token, url } = await schedulesUrl();
    const res = await h.request(token, { method: 'POST', url, payload: { name: ['x'], minute: {}, is_active: 'maybe' } });
    expect(res.statusCode).toBe(422);
    const metas = res.json().errors.map((e: { meta: object }) => e.meta);
    expect(metas).toEqual(
      expect.arrayContaining([
        { source_field: 'name', rule: 'string' },
        { source_field: 'minute', rule: 'string' },
        { source_field: 'is_active', rule: 'boolean' },
      ]),
    );
    for (const error of res.json().errors) expect(error).toMatchObject({ code: 'ValidationException', status: '422' });
  });

  it('serves an OpenAPI 3.1 document', async () => {
    const res = await h.request(null, { method: 'GET', url: '/api/client/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toContain('/api/client/servers/{server}/schedules');
    expect(doc.paths['/api/client/servers/{server}/schedules'].post.requestBody).toBeDefined();
  });

  it('GET /health answers ok and says whether server processes run confined', async () => {
    const res = await h.request(null, { method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', containment: h.daemon.containment });
    expect(['on', 'off']).toContain(h.daemon.containment);
  });
});

describeEachDatabase('authentication', (database) => {
  const h = useHarness(database, { RATE_LIMIT_PER_MINUTE: '5' });

  it('no, malformed, unknown or revoked tokens are 401', async () => {
    const { owner, server } = await h.make.ownedServer();
    const url = `/api/client/servers/${server.uuid}`;
    const forged = owner.token.slice(0, 16) + 'x'.repeat(32);
    for (const authorization of [
      undefined,
      'Basic abc',
      'Bearer',
      'Bearer ptlc_short',
      `Bearer ${forged}`,
      `Bearer ptlc_${'a'.repeat(43)}`,
    ]) {
      const res = await h.app.inject({ method: 'GET', url, headers: authorization ? { authorization } : {} });
      expect(res.statusCode, String(authorization)).toBe(401);
      expect(res.json().errors[0]).toMatchObject({ code: 'AuthenticationException', status: '401' });
    }
    await h.db.db
      .updateTable('api_keys')
      .set({ revoked_at: Date.now() })
      .where('identifier', '=', owner.token.slice(0, 16))
      .execute();
    expect((await h.request(owner.token, { method: 'GET', url })).statusCode).toBe(401);
  });

  it('401 comes before 404: an unauthenticated caller learns nothing about servers', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/api/client/servers/00000000' });
    expect(res.statusCode).toBe(401);
  });

  it('a key with allowed IPs refuses other callers with 403', async () => {
    const outsider = await h.make.user({ allowedIps: ['10.0.0.0/8'] });
    const server = await h.make.server(outsider.user);
    const res = await h.request(outsider.token, { method: 'GET', url: `/api/client/servers/${server.uuid}` });
    expect(res.statusCode).toBe(403);
    const insider = await h.make.user({ allowedIps: ['10.1.2.3', '127.0.0.0/8'] });
    const own = await h.make.server(insider.user);
    expect((await h.request(insider.token, { method: 'GET', url: `/api/client/servers/${own.uuid}` })).statusCode).toBe(200);
  });

  it('records last_used_at', async () => {
    const { owner, server } = await h.make.ownedServer();
    await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid}` });
    const key = await h.db.db
      .selectFrom('api_keys')
      .selectAll()
      .where('identifier', '=', owner.token.slice(0, 16))
      .executeTakeFirstOrThrow();
    expect(key.last_used_at).not.toBeNull();
    expect(key.token_hash).not.toContain(owner.token.slice(16));
  });

  it('rate limits per user with 429 and the headers', async () => {
    const { owner, server } = await h.make.ownedServer();
    const url = `/api/client/servers/${server.uuid}`;
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 6; i++) {
      last = await h.request(owner.token, { method: 'GET', url });
      statuses.push(last.statusCode);
      if (i === 0) {
        expect(last.headers['x-ratelimit-limit']).toBe('5');
        expect(last.headers['x-ratelimit-remaining']).toBe('4');
      }
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(last!.json().errors[0]).toMatchObject({ code: 'TooManyRequestsHttpException', status: '429' });
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
    // Another user has a budget of their own.
    const other = await h.make.ownedServer();
    expect(
      (await h.request(other.owner.token, { method: 'GET', url: `/api/client/servers/${other.server.uuid}` })).statusCode,
    ).toBe(200);
    h.clock.advance(61_000);
    expect((await h.request(owner.token, { method: 'GET', url })).statusCode).toBe(200);
  });
});
