import { generateSync } from 'otplib';
import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness, type Harness } from '../helpers/harness.js';
import { freshIp, login, setCookies, userWithPassword } from '../helpers/sign-in.js';

/** A code of the authenticator app, at the harness's clock. */
const codeAt = (h: Harness, secret: string, offsetSteps = 0) =>
  generateSync({ secret, epoch: Math.floor(h.clock.now() / 1000) + offsetSteps * 30 });

/** Two-factor TOTP (docs/reference/accounts.md): setting it up, the sign-in checkpoint, replays, recovery tokens, turning it off. */
describeEachDatabase('two-factor', (database) => {
  const h = useHarness(database);

  const checkpoint = (payload: object, ip: string) =>
    h.app.inject({ method: 'POST', url: '/auth/login/checkpoint', payload, remoteAddress: ip });

  async function enabled() {
    const made = await userWithPassword(h);
    const setup = await h.request(made.token, { method: 'GET', url: '/api/client/account/two-factor' });
    expect(setup.statusCode).toBe(200);
    const { image_url_data: uri, secret } = setup.json().data as { image_url_data: string; secret: string };
    expect(uri).toBe(`otpauth://totp/Quetzal:${encodeURIComponent(made.user.email)}?secret=${secret}&issuer=Quetzal`);
    expect(secret).toMatch(/^[A-Z2-7]{16,}$/);
    const enable = await h.request(made.token, {
      method: 'POST',
      url: '/api/client/account/two-factor',
      payload: { code: codeAt(h, secret), password: made.password },
    });
    expect(enable.statusCode).toBe(200);
    const body = enable.json() as { object: string; attributes: { tokens: string[] } };
    expect(body.object).toBe('recovery_tokens');
    expect(body.attributes.tokens).toHaveLength(10);
    expect(new Set(body.attributes.tokens).size).toBe(10);
    expect(body.attributes.tokens.every((t) => /^[A-Za-z0-9]{10}$/.test(t))).toBe(true);
    h.clock.advance(30_000); // the enabling code's step is used
    return { ...made, secret, tokens: body.attributes.tokens };
  }

  it('sets up: the secret is sealed in the database, pending, and enabling needs the password and a right code', async () => {
    const made = await userWithPassword(h);
    const setup = (await h.request(made.token, { method: 'GET', url: '/api/client/account/two-factor' })).json().data;
    const row = await h.db.db
      .selectFrom('users')
      .select(['totp_secret', 'use_totp'])
      .where('id', '=', made.user.id)
      .executeTakeFirstOrThrow();
    expect(row.totp_secret).not.toContain(setup.secret);
    expect(Number(row.use_totp)).toBe(0);
    const post = (payload: object) => h.request(made.token, { method: 'POST', url: '/api/client/account/two-factor', payload });
    const missing = await post({});
    expect(missing.statusCode).toBe(422);
    expect(missing.json().errors.map((e: { meta: { source_field: string } }) => e.meta.source_field)).toEqual([
      'code',
      'password',
    ]);
    const badPassword = await post({ code: codeAt(h, setup.secret), password: 'nope' });
    expect(badPassword.statusCode).toBe(400);
    expect(badPassword.json().errors[0].detail).toBe('The password provided was not valid.');
    const wrongCode = codeAt(h, setup.secret) === '000000' ? '111111' : '000000';
    const badCode = await post({ code: wrongCode, password: made.password });
    expect(badCode.statusCode).toBe(400);
    expect(badCode.json().errors[0].detail).toBe('The two-factor authentication token provided was not valid.');
    expect((await post({ code: codeAt(h, setup.secret), password: made.password })).statusCode).toBe(200);
    const again = await h.request(made.token, { method: 'GET', url: '/api/client/account/two-factor' });
    expect(again.statusCode).toBe(400);
    expect(again.json().errors[0].detail).toBe('Two-factor authentication is already enabled on this account.');
    const hashes = await h.db.db.selectFrom('recovery_tokens').select('token_hash').where('user_id', '=', made.user.id).execute();
    expect(hashes).toHaveLength(10);
    expect(hashes.every((r) => /^[0-9a-f]{64}$/.test(r.token_hash))).toBe(true);
  });

  it('sign-in stops at a checkpoint; a code completes it once; a replayed or wrong code is refused', async () => {
    const { user, password, secret } = await enabled();
    const ip = freshIp();
    const first = await login(h, { user: user.username, password }, ip);
    expect(first.statusCode).toBe(200);
    const data = first.json().data as { complete: boolean; confirmation_token: string };
    expect(data.complete).toBe(false);
    expect(data.confirmation_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(setCookies(first).size).toBe(0);

    const wrongCode = codeAt(h, secret) === '000000' ? '111111' : '000000';
    const wrong = await checkpoint({ confirmation_token: data.confirmation_token, authentication_code: wrongCode }, ip);
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().errors[0].detail).toBe('The two-factor authentication token was invalid.');
    const bogus = await checkpoint({ confirmation_token: 'x'.repeat(43), authentication_code: codeAt(h, secret) }, ip);
    expect(bogus.statusCode).toBe(400);
    expect(bogus.json().errors[0].detail).toBe(
      'The authentication token provided has expired, please refresh the page and try again.',
    );

    const code = codeAt(h, secret);
    const done = await checkpoint({ confirmation_token: data.confirmation_token, authentication_code: code }, ip);
    expect(done.statusCode).toBe(200);
    expect(done.json().data).toMatchObject({ complete: true, user: { id: user.id } });
    const cookies = setCookies(done);
    expect(cookies.get('quetzal_session')?.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // The checkpoint is spent.
    const reused = await checkpoint(
      { confirmation_token: data.confirmation_token, authentication_code: codeAt(h, secret, 1) },
      ip,
    );
    expect(reused.statusCode).toBe(400);

    // Replay: the same code on a new checkpoint, within its window, is refused; so is an earlier step's.
    const second = (await login(h, { user: user.username, password }, ip)).json().data.confirmation_token as string;
    const replay = await checkpoint({ confirmation_token: second, authentication_code: code }, ip);
    expect(replay.statusCode).toBe(400);
    const earlier = await checkpoint({ confirmation_token: second, authentication_code: codeAt(h, secret, -1) }, ip);
    expect(earlier.statusCode).toBe(400);
    h.clock.advance(30_000);
    const next = await checkpoint({ confirmation_token: second, authentication_code: codeAt(h, secret) }, ip);
    expect(next.statusCode).toBe(200);

    // A checkpoint lasts 5 minutes.
    const third = (await login(h, { user: user.username, password }, ip)).json().data.confirmation_token as string;
    h.clock.advance(5 * 60_000);
    const late = await checkpoint({ confirmation_token: third, authentication_code: codeAt(h, secret) }, ip);
    expect(late.statusCode).toBe(400);
    expect(late.json().errors[0].detail).toBe(
      'The authentication token provided has expired, please refresh the page and try again.',
    );
  });

  it('the checkpoint is throttled like sign-in: a sixth failure from one address is a 429 with Retry-After', async () => {
    const { user, password, secret } = await enabled();
    const ip = freshIp();
    const token = (await login(h, { user: user.username, password }, ip)).json().data.confirmation_token as string;
    const wrongCode = codeAt(h, secret) === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i++) {
      expect((await checkpoint({ confirmation_token: token, authentication_code: wrongCode }, ip)).statusCode).toBe(400);
    }
    const throttled = await checkpoint({ confirmation_token: token, authentication_code: codeAt(h, secret) }, ip);
    expect(throttled.statusCode).toBe(429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0);
    // Signing in again with the right password does not reset the count of guessed codes.
    const again = (await login(h, { user: user.username, password }, ip)).json().data.confirmation_token as string;
    expect((await checkpoint({ confirmation_token: again, authentication_code: codeAt(h, secret) }, ip)).statusCode).toBe(429);
    // Another address is not refused.
    const elsewhere = freshIp();
    const other = (await login(h, { user: user.username, password }, elsewhere)).json().data.confirmation_token as string;
    expect((await checkpoint({ confirmation_token: other, authentication_code: codeAt(h, secret) }, elsewhere)).statusCode).toBe(
      200,
    );
  });

  it('two requests with one code: only one passes', async () => {
    const { user, password, secret } = await enabled();
    const ip = freshIp();
    const a = (await login(h, { user: user.username, password }, ip)).json().data.confirmation_token as string;
    const b = (await login(h, { user: user.username, password }, ip)).json().data.confirmation_token as string;
    const code = codeAt(h, secret);
    const results = await Promise.all([
      checkpoint({ confirmation_token: a, authentication_code: code }, ip),
      checkpoint({ confirmation_token: b, authentication_code: code }, ip),
    ]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 400]);
  });

  it('a recovery token completes a checkpoint once; the account activity shows the steps', async () => {
    const { user, token, password, tokens } = await enabled();
    const ip = freshIp();
    const first = (await login(h, { user: user.username, password }, ip)).json().data.confirmation_token as string;
    const ok = await checkpoint({ confirmation_token: first, recovery_token: tokens[0] }, ip);
    expect(ok.statusCode).toBe(200);
    const second = (await login(h, { user: user.username, password }, ip)).json().data.confirmation_token as string;
    const again = await checkpoint({ confirmation_token: second, recovery_token: tokens[0] }, ip);
    expect(again.statusCode).toBe(400);
    expect(again.json().errors[0].detail).toBe('The recovery token provided is not valid.');
    expect((await checkpoint({ confirmation_token: second, recovery_token: tokens[1] }, ip)).statusCode).toBe(200);
    expect(await h.db.db.selectFrom('recovery_tokens').select('id').where('user_id', '=', user.id).execute()).toHaveLength(8);

    const logged = await h.request(token, { method: 'GET', url: '/api/client/account/activity?sort=timestamp' });
    expect(logged.json().data.map((e: { attributes: { event: string } }) => e.attributes.event)).toEqual([
      'user:two-factor.create',
      'auth:checkpoint',
      'auth:recovery-token',
      'auth:success',
      'auth:checkpoint',
      'auth:fail',
      'auth:recovery-token',
      'auth:success',
    ]);
  });

  it('turns off with the password (POST .../disable and DELETE), then sign-in needs no code', async () => {
    for (const disable of [
      (token: string, password: string) =>
        h.request(token, { method: 'POST', url: '/api/client/account/two-factor/disable', payload: { password } }),
      (token: string, password: string) =>
        h.request(token, { method: 'DELETE', url: '/api/client/account/two-factor', payload: { password } }),
      (token: string, password: string) =>
        h.request(token, { method: 'DELETE', url: `/api/client/account/two-factor?password=${encodeURIComponent(password)}` }),
    ]) {
      const { user, token, password } = await enabled();
      const wrong = await disable(token, 'not the password');
      expect(wrong.statusCode).toBe(400);
      expect(wrong.json().errors[0].detail).toBe('The password provided was not valid.');
      expect((await disable(token, password)).statusCode).toBe(204);
      const signed = await login(h, { user: user.username, password }, freshIp());
      expect(signed.json().data.complete).toBe(true);
      expect(await h.db.db.selectFrom('recovery_tokens').select('id').where('user_id', '=', user.id).execute()).toEqual([]);
      const last = await h.request(token, { method: 'GET', url: '/api/client/account/activity?filter[event]=two-factor' });
      expect(last.json().data[0].attributes.event).toBe('user:two-factor.delete');
    }
  });
});
