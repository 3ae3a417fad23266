import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { browserRequest, freshIp, login, signIn, userWithPassword } from '../helpers/sign-in.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;

/** Pterodactyl's /api/client/account routes: the account, its password, its API keys. */
describeEachDatabase('account', (database) => {
  const h = useHarness(database);

  it('GET /account answers the user object, by key and by session', async () => {
    const { user, token, password } = await userWithPassword(h);
    const expected = {
      object: 'user',
      attributes: {
        id: user.id,
        admin: false,
        username: user.username,
        email: user.email,
        first_name: '',
        last_name: '',
        language: 'en',
      },
    };
    const byKey = await h.request(token, { method: 'GET', url: '/api/client/account' });
    expect(byKey.statusCode).toBe(200);
    expect(byKey.json()).toEqual(expected);
    const session = await signIn(h, user.username, password);
    expect((await browserRequest(h, session, { method: 'GET', url: '/api/client/account' })).json()).toEqual(expected);
    const admin = await h.make.user({ admin: true });
    expect((await h.request(admin.token, { method: 'GET', url: '/api/client/account' })).json().attributes.admin).toBe(true);
    expect((await h.app.inject({ method: 'GET', url: '/api/client/account' })).statusCode).toBe(401);
  });

  const change = (session: { cookie: string; csrf: string }, payload: object) =>
    browserRequest(h, session, { method: 'PUT', url: '/api/client/account/password', payload, csrf: session.csrf });

  it('PUT /account/password refuses a wrong current password with 400 before looking at the new one', async () => {
    const { user, password } = await userWithPassword(h);
    const session = await signIn(h, user.username, password);
    for (const payload of [
      { current_password: 'not it at all', password: 'new password 1', password_confirmation: 'new password 1' },
      { current_password: 'not it at all', password: 'x' },
      { password: 'new password 1', password_confirmation: 'new password 1' },
      { current_password: ` ${password}`, password: 'new password 1', password_confirmation: 'new password 1' },
    ]) {
      const res = await change(session, payload);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        errors: [{ code: 'DisplayException', status: '400', detail: 'The password provided was invalid for this account.' }],
      });
    }
  });

  it('PUT /account/password applies the rules: required, confirmed, at least 8 characters, at most 1024 bytes', async () => {
    const { user, password } = await userWithPassword(h);
    const session = await signIn(h, user.username, password);
    const rules = async (payload: object) => {
      const res = await change(session, { current_password: password, ...payload });
      expect(res.statusCode).toBe(422);
      return res.json().errors.map((e: any) => `${e.meta.source_field}:${e.meta.rule}`);
    };
    expect(await rules({})).toEqual(['password:required']);
    expect(await rules({ password: 'long enough', password_confirmation: 'different' })).toEqual(['password:confirmed']);
    expect(await rules({ password: 'short', password_confirmation: 'short' })).toEqual(['password:min']);
    expect(await rules({ password: 'short' })).toEqual(['password:confirmed', 'password:min']);
    const huge = 'é'.repeat(513);
    expect(await rules({ password: huge, password_confirmation: huge })).toEqual(['password:max']);
    // Nothing changed: the old password still signs in.
    expect((await login(h, { user: user.username, password })).statusCode).toBe(200);
  });

  it('changes the password, keeps the current session, ends the others and leaves the API keys working', async () => {
    const { user, token, password } = await userWithPassword(h);
    const current = await signIn(h, user.username, password);
    const other = await signIn(h, user.email, password);
    const res = await change(current, {
      current_password: password,
      password: '  new secret  ',
      password_confirmation: '  new secret  ',
    });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect((await browserRequest(h, current, { method: 'GET', url: '/api/client/account' })).statusCode).toBe(200);
    expect((await browserRequest(h, other, { method: 'GET', url: '/api/client/account' })).statusCode).toBe(401);
    expect((await h.request(token, { method: 'GET', url: '/api/client/account' })).statusCode).toBe(200);
    expect((await login(h, { user: user.username, password }, freshIp())).statusCode).toBe(422);
    // Kept as sent, spaces included.
    expect((await login(h, { user: user.username, password: 'new secret' }, freshIp())).statusCode).toBe(422);
    expect((await login(h, { user: user.username, password: '  new secret  ' }, freshIp())).statusCode).toBe(200);
  });

  it('changed by key, it ends every session', async () => {
    const { user, token, password } = await userWithPassword(h);
    const session = await signIn(h, user.username, password);
    const res = await h.request(token, {
      method: 'PUT',
      url: '/api/client/account/password',
      payload: { current_password: password, password: 'brand new pass', password_confirmation: 'brand new pass' },
    });
    expect(res.statusCode).toBe(204);
    expect((await browserRequest(h, session, { method: 'GET', url: '/api/client/account' })).statusCode).toBe(401);
  });

  it('needs the CSRF token with a session', async () => {
    const { user, password } = await userWithPassword(h);
    const session = await signIn(h, user.username, password);
    const res = await browserRequest(h, session, {
      method: 'PUT',
      url: '/api/client/account/password',
      payload: { current_password: password, password: 'brand new pass', password_confirmation: 'brand new pass' },
    });
    expect(res.statusCode).toBe(403);
    expect((await login(h, { user: user.username, password })).statusCode).toBe(200);
  });

  it('creates an API key: the api_key object and, once, its secret, which works as a bearer token', async () => {
    const { user, password } = await userWithPassword(h);
    const session = await signIn(h, user.username, password);
    const res = await browserRequest(h, session, {
      method: 'POST',
      url: '/api/client/account/api-keys',
      payload: { description: '  Deploy script  ', allowed_ips: ['127.0.0.1', ' 10.0.0.0/8 '] },
      csrf: session.csrf,
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      object: 'api_key',
      attributes: {
        identifier: expect.stringMatching(/^ptlc_[A-Za-z0-9]{11}$/),
        description: 'Deploy script',
        allowed_ips: ['127.0.0.1', '10.0.0.0/8'],
        last_used_at: null,
        created_at: expect.stringMatching(ISO),
      },
      meta: { secret_token: expect.stringMatching(/^ptlc_[A-Za-z0-9]{43}$/) },
    });
    expect(body.meta.secret_token.startsWith(body.attributes.identifier)).toBe(true);
    const byNewKey = await h.request(body.meta.secret_token, { method: 'GET', url: '/api/client/account' });
    expect(byNewKey.statusCode).toBe(200);
    expect(byNewKey.json().attributes.id).toBe(user.id);

    const listed = await browserRequest(h, session, { method: 'GET', url: '/api/client/account/api-keys' });
    expect(listed.statusCode).toBe(200);
    const keys = listed.json();
    expect(keys.object).toBe('list');
    // The factory's key and the new one, oldest first; never a secret.
    expect(keys.data.map((k: any) => k.attributes.identifier)).toEqual([expect.any(String), body.attributes.identifier]);
    expect(keys.data[1].attributes.last_used_at).toMatch(ISO);
    expect(JSON.stringify(keys)).not.toContain(body.meta.secret_token.slice(16));
  });

  it('validates a new key: description required and at most 500 characters, allowed_ips an array of IPs or CIDRs', async () => {
    const { token } = await userWithPassword(h);
    const post = (payload: object) => h.request(token, { method: 'POST', url: '/api/client/account/api-keys', payload });
    const failures = async (payload: object) => {
      const res = await post(payload);
      expect(res.statusCode).toBe(422);
      return res.json().errors.map((e: any) => `${e.meta.source_field}:${e.meta.rule}`);
    };
    expect(await failures({})).toEqual(['description:required']);
    expect(await failures({ description: '   ' })).toEqual(['description:required']);
    expect(await failures({ description: 'x'.repeat(501) })).toEqual(['description:max']);
    expect(await failures({ description: 'x', allowed_ips: '127.0.0.1' })).toEqual(['allowed_ips:array']);
    expect(await failures({ description: 'x', allowed_ips: ['127.0.0.1', 'nope', '10.0.0.0/33', 5] })).toEqual([
      'allowed_ips.1:ip',
      'allowed_ips.2:ip',
      'allowed_ips.3:string',
    ]);
    expect(await failures({ description: 'x', allowed_ips: Array.from({ length: 51 }, (_, i) => `10.0.0.${i}`) })).toEqual([
      'allowed_ips:max',
    ]);
    expect((await post({ description: 'x', allowed_ips: null })).json().attributes.allowed_ips).toEqual([]);
  });

  it('refuses a 26th key with 400, and counts only live keys', async () => {
    const { user, token } = await userWithPassword(h);
    const post = () => h.request(token, { method: 'POST', url: '/api/client/account/api-keys', payload: { description: 'k' } });
    // The factory made one already.
    for (let i = 2; i <= 25; i++) expect((await post()).statusCode, `key ${i}`).toBe(200);
    const refused = await post();
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toEqual({
      errors: [{ code: 'DisplayException', status: '400', detail: 'You have reached the account limit for number of API keys.' }],
    });
    const live = await h.db.db
      .selectFrom('api_keys')
      .select('identifier')
      .where('user_id', '=', user.id)
      .where('revoked_at', 'is', null)
      .execute();
    expect(live).toHaveLength(25);
    expect(
      (await h.request(token, { method: 'DELETE', url: `/api/client/account/api-keys/${live[24]!.identifier}` })).statusCode,
    ).toBe(204);
    expect((await post()).statusCode).toBe(200);
  });

  it('keeps to 25 keys when requests race', async () => {
    const { user, token } = await userWithPassword(h);
    const results = await Promise.all(
      Array.from({ length: 30 }, () =>
        h.request(token, { method: 'POST', url: '/api/client/account/api-keys', payload: { description: 'race' } }),
      ),
    );
    expect(results.filter((r) => r.statusCode === 200)).toHaveLength(24);
    expect(results.filter((r) => r.statusCode === 400)).toHaveLength(6);
    const live = await h.db.db
      .selectFrom('api_keys')
      .select('id')
      .where('user_id', '=', user.id)
      .where('revoked_at', 'is', null)
      .execute();
    expect(live).toHaveLength(25);
  });

  it('deletes a key: it stops working at once; another user’s key or an unknown one is a 404', async () => {
    const { user, password } = await userWithPassword(h);
    const session = await signIn(h, user.username, password);
    const created = (
      await browserRequest(h, session, {
        method: 'POST',
        url: '/api/client/account/api-keys',
        payload: { description: 'temp' },
        csrf: session.csrf,
      })
    ).json();
    const secret = created.meta.secret_token as string;
    const url = `/api/client/account/api-keys/${created.attributes.identifier}`;
    expect((await h.request(secret, { method: 'GET', url: '/api/client/account' })).statusCode).toBe(200);

    const stranger = await h.make.user();
    const theirs = await h.request(stranger.token, { method: 'DELETE', url });
    expect(theirs.statusCode).toBe(404);
    expect(theirs.json().errors[0]).toMatchObject({ code: 'NotFoundHttpException', status: '404' });
    expect((await h.request(secret, { method: 'GET', url: '/api/client/account' })).statusCode).toBe(200);

    expect((await browserRequest(h, session, { method: 'DELETE', url })).statusCode).toBe(403);
    const deleted = await browserRequest(h, session, { method: 'DELETE', url, csrf: session.csrf });
    expect(deleted.statusCode).toBe(204);
    expect((await h.request(secret, { method: 'GET', url: '/api/client/account' })).statusCode).toBe(401);
    expect((await browserRequest(h, session, { method: 'DELETE', url, csrf: session.csrf })).statusCode).toBe(404);
    expect(
      (
        await browserRequest(h, session, {
          method: 'DELETE',
          url: '/api/client/account/api-keys/ptlc_NoSuchKey00',
          csrf: session.csrf,
        })
      ).statusCode,
    ).toBe(404);
    const listed = (await browserRequest(h, session, { method: 'GET', url: '/api/client/account/api-keys' })).json();
    expect(listed.data.map((k: any) => k.attributes.identifier)).not.toContain(created.attributes.identifier);
  });

  it('lets a key delete itself', async () => {
    const { token } = await h.make.user();
    const identifier = token.slice(0, 16);
    expect((await h.request(token, { method: 'DELETE', url: `/api/client/account/api-keys/${identifier}` })).statusCode).toBe(
      204,
    );
    expect((await h.request(token, { method: 'GET', url: '/api/client/account' })).statusCode).toBe(401);
  });

  it('answers 405 for a known account path with another method', async () => {
    const { token } = await h.make.user();
    expect((await h.request(token, { method: 'GET', url: '/api/client/account/password' })).statusCode).toBe(405);
    expect((await h.request(token, { method: 'DELETE', url: '/api/client/account' })).statusCode).toBe(405);
  });
});
