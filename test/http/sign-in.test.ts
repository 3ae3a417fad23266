import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { cookiesSecure } from '../../src/http/cookies.js';
import { insertLoginAttempt } from '../../src/modules/sessions/sessions.repository.js';
import { accountBucket } from '../../src/modules/sessions/sessions.throttle.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { browserRequest, freshIp, login, setCookies, signIn, userWithPassword } from '../helpers/sign-in.js';

const FAILED = 'No account matching those credentials could be found.';
const DAY = 86_400_000;
/** Tests that check a password a dozen times or more: scrypt takes ~85 ms alone, far longer on a busy machine. */
const SCRYPT_HEAVY = { timeout: 120_000 };

/** docs/reference/web-console.md: POST /auth/login, GET /auth/session, POST /auth/logout, and how sessions end. */
describeEachDatabase('sign-in', (database) => {
  const h = useHarness(database);

  it('signs in by username and by email, in any letter case, and answers the account', async () => {
    const { user, password } = await userWithPassword(h);
    for (const name of [user.username, user.email, user.email.toUpperCase(), user.username.toUpperCase()]) {
      const res = await login(h, { user: name, password });
      expect(res.statusCode, name).toBe(200);
      expect(res.json()).toEqual({
        data: {
          complete: true,
          intended: '/',
          user: {
            id: user.id,
            admin: false,
            username: user.username,
            email: user.email,
            first_name: '',
            last_name: '',
            language: 'en',
          },
        },
      });
    }
  });

  it('sets an HttpOnly SameSite=Lax session cookie and a readable XSRF-TOKEN cookie, stored only as a hash', async () => {
    const { user, password } = await userWithPassword(h);
    const { response, token, csrf } = await signIn(h, user.username, password);
    const cookies = setCookies(response);
    const session = cookies.get('quetzal_session')!;
    expect(session.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(session.attributes).toEqual(expect.arrayContaining(['Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${30 * 86_400}`]));
    expect(session.attributes).not.toContain('Secure');
    const xsrf = cookies.get('XSRF-TOKEN')!;
    expect(xsrf.value).toBe(csrf);
    expect(xsrf.attributes).toEqual(expect.arrayContaining(['Path=/', 'SameSite=Lax']));
    expect(xsrf.attributes).not.toContain('HttpOnly');

    const rows = await h.db.db.selectFrom('sessions').selectAll().where('user_id', '=', user.id).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.id).toMatch(/^[0-9a-f]{64}$/);
    expect(rows[0]!.id).not.toContain(token);
    expect(rows[0]!.csrf_token).toBe(csrf);
    expect(rows[0]!.expires_at - rows[0]!.created_at).toBe(30 * DAY);
  });

  it('answers a wrong password and an unknown name with the same 422', async () => {
    const { user, password } = await userWithPassword(h);
    const wrong = await login(h, { user: user.username, password: `${password}!` });
    const unknown = await login(h, { user: 'nobody_here', password });
    const unknownEmail = await login(h, { user: 'nobody@example.test', password });
    const noPassword = await h.make.user();
    const passwordless = await login(h, { user: noPassword.user.username, password: 'anything at all' });
    const expected = {
      errors: [
        { code: 'ValidationException', status: '422', detail: FAILED, meta: { source_field: 'user', rule: 'credentials' } },
      ],
    };
    for (const res of [wrong, unknown, unknownEmail, passwordless]) {
      expect(res.statusCode).toBe(422);
      expect(res.json()).toEqual(expected);
      expect(res.headers['set-cookie']).toBeUndefined();
    }
    // A password is compared as sent: no trimming.
    expect((await login(h, { user: user.username, password: ` ${password} ` })).statusCode).toBe(422);
  });

  it('validates the body: both members required', async () => {
    const res = await login(h, { user: 'someone' });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors[0].meta).toEqual({ source_field: 'password', rule: 'required' });
    expect((await login(h, { password: 'x' })).json().errors[0].meta).toEqual({ source_field: 'user', rule: 'required' });
  });

  it(
    'throttles an account from one address: 5 failures in 15 minutes, then 429 with Retry-After; the right password waits too',
    SCRYPT_HEAVY,
    async () => {
      const { user, password } = await userWithPassword(h);
      const attacker = freshIp();
      for (let i = 0; i < 5; i++)
        expect(
          (await login(h, { user: i % 2 ? user.email : user.username, password: 'wrong password' }, attacker)).statusCode,
        ).toBe(422);
      const refused = await login(h, { user: user.username, password }, attacker);
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toEqual({
        errors: [
          {
            code: 'TooManyRequestsHttpException',
            status: '429',
            detail: `Too many login attempts. Please try again in ${refused.headers['retry-after']} seconds.`,
          },
        ],
      });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(14 * 60);
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(15 * 60);
      // An unknown name is throttled the same way: the answers do not tell which names exist.
      for (let i = 0; i < 5; i++)
        expect((await login(h, { user: 'ghost_user_x', password: 'wrong password' }, attacker)).statusCode).toBe(422);
      expect((await login(h, { user: 'ghost_user_x', password: 'wrong password' }, attacker)).statusCode).toBe(429);

      h.clock.advance(15 * 60_000 + 1000);
      expect((await login(h, { user: user.username, password }, attacker)).statusCode).toBe(200);
    },
  );

  it('never locks the account for another address: failures elsewhere leave its owner signing in', SCRYPT_HEAVY, async () => {
    const { user, password } = await userWithPassword(h);
    const attacker = freshIp();
    for (let i = 0; i < 5; i++)
      expect((await login(h, { user: user.username, password: 'wrong password' }, attacker)).statusCode).toBe(422);
    expect((await login(h, { user: user.username, password: 'wrong password' }, attacker)).statusCode).toBe(429);
    const owner = freshIp();
    // The owner's own typos count for the owner's address only.
    for (let i = 0; i < 4; i++)
      expect((await login(h, { user: user.username, password: 'typo typo' }, owner)).statusCode).toBe(422);
    expect((await login(h, { user: user.email, password }, owner)).statusCode).toBe(200);
    // The attacker's address stays refused, the owner's success forgets nothing of it.
    expect((await login(h, { user: user.username, password }, attacker)).statusCode).toBe(429);
  });

  it(
    'past 50 failures from all addresses, each address gets 1 failure in 15 minutes on that account, and still its first attempt',
    SCRYPT_HEAVY,
    async () => {
      const { user, password } = await userWithPassword(h);
      // 45 failures from 9 other addresses, as the throttle stores them (one scrypt each would take minutes on a busy
      // machine)...
      for (let i = 0; i < 45; i++)
        await insertLoginAttempt(h.db.db, accountBucket(user.id, user.username), h.clock.now() - 60_000);
      // ...and 5 real ones from a tenth address, each within its own budget, which take the account to 50.
      const tenth = freshIp();
      for (let i = 0; i < 5; i++)
        expect((await login(h, { user: user.username, password: `guess ${i}` }, tenth)).statusCode).toBe(422);
      // A fresh address is slowed to one failure...
      const slowed = freshIp();
      expect((await login(h, { user: user.username, password: 'guess 51' }, slowed)).statusCode).toBe(422);
      const refused = await login(h, { user: user.username, password }, slowed);
      expect(refused.statusCode).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(14 * 60);
      // ...but every other address still gets its attempt, so the owner is never locked out.
      expect((await login(h, { user: user.username, password }, freshIp())).statusCode).toBe(200);
      // Another account is not affected by this one's attack.
      const other = await userWithPassword(h);
      const ip = freshIp();
      for (let i = 0; i < 2; i++)
        expect((await login(h, { user: other.user.username, password: 'nope nope' }, ip)).statusCode).toBe(422);
      expect((await login(h, { user: other.user.username, password: other.password }, ip)).statusCode).toBe(200);
      // The attack's failures age out with the window.
      h.clock.advance(15 * 60_000 + 1000);
      const later = freshIp();
      for (let i = 0; i < 4; i++)
        expect((await login(h, { user: user.username, password: 'nope nope' }, later)).statusCode).toBe(422);
      expect((await login(h, { user: user.username, password }, later)).statusCode).toBe(200);
    },
  );

  it('counts attempts in the database: another instance on the same database refuses the same pair', SCRYPT_HEAVY, async () => {
    const { user, password } = await userWithPassword(h);
    const other = await buildApp(h.deps, { logger: false });
    try {
      const ip = freshIp();
      for (let i = 0; i < 5; i++) {
        const app = i % 2 ? other : h.app;
        const res = await app.inject({
          method: 'POST',
          url: '/auth/login',
          payload: { user: user.username, password: 'nope nope' },
          remoteAddress: ip,
        });
        expect(res.statusCode).toBe(422);
      }
      const refused = await other.inject({
        method: 'POST',
        url: '/auth/login',
        payload: { user: user.username, password },
        remoteAddress: ip,
      });
      expect(refused.statusCode).toBe(429);
      expect((await login(h, { user: user.username, password }, ip)).statusCode).toBe(429);
      expect(
        (
          await other.inject({
            method: 'POST',
            url: '/auth/login',
            payload: { user: user.username, password },
            remoteAddress: freshIp(),
          })
        ).statusCode,
      ).toBe(200);
    } finally {
      await other.close();
    }
  });

  it('counts an IPv6 /64 as one address: its many addresses do not multiply the budget', async () => {
    const { user, password } = await userWithPassword(h);
    const prefix = `2001:db8:${randomBytes(2).toString('hex')}:${randomBytes(2).toString('hex')}`;
    for (let i = 0; i < 5; i++) {
      const res = await login(h, { user: user.username, password: 'wrong password' }, `${prefix}::${(i + 1).toString(16)}`);
      expect(res.statusCode).toBe(422);
    }
    // The same /64 written another way (leading zeros, full form) is the same bucket.
    const sameNet = `${prefix
      .split(':')
      .map((g) => g.padStart(4, '0'))
      .join(':')}:0:0:0:ff`;
    expect((await login(h, { user: user.username, password }, sameNet)).statusCode).toBe(429);
    expect(
      (await login(h, { user: user.username, password }, `2001:db8:ffff:${randomBytes(2).toString('hex')}::1`)).statusCode,
    ).toBe(200);
  });

  it('throttles an address: 20 attempts a minute, whatever the accounts', SCRYPT_HEAVY, async () => {
    const ip = freshIp();
    const { user, password } = await userWithPassword(h);
    for (let i = 0; i < 20; i++) {
      const res = await login(h, { user: `nobody_${i}`, password: 'whatever it is' }, ip);
      expect(res.statusCode, `attempt ${i + 1}`).toBe(422);
    }
    const refused = await login(h, { user: user.username, password }, ip);
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    // Another address is not affected.
    expect((await login(h, { user: user.username, password })).statusCode).toBe(200);
    h.clock.advance(61_000);
    expect((await login(h, { user: user.username, password }, ip)).statusCode).toBe(200);
  });

  it('refuses a sign-in another site makes the browser send', async () => {
    const { user, password } = await userWithPassword(h);
    const res = await login(h, { user: user.username, password }, freshIp(), { 'sec-fetch-site': 'cross-site' });
    expect(res.statusCode).toBe(403);
    expect(res.headers['set-cookie']).toBeUndefined();
    expect((await login(h, { user: user.username, password }, freshIp(), { 'sec-fetch-site': 'same-origin' })).statusCode).toBe(
      200,
    );
  });

  it('GET /auth/session answers the user and the CSRF token with a live cookie, 401 otherwise', async () => {
    const { user, password } = await userWithPassword(h);
    const session = await signIn(h, user.email, password);
    const res = await browserRequest(h, session, { method: 'GET', url: '/auth/session' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      data: {
        user: {
          id: user.id,
          admin: false,
          username: user.username,
          email: user.email,
          first_name: '',
          last_name: '',
          language: 'en',
          use_totp: false,
        },
        csrf_token: session.csrf,
      },
    });
    // Two-factor's state, for the console's account page.
    await h.deps.db.updateTable('users').set({ use_totp: 1 }).where('id', '=', user.id).execute();
    const withTotp = await browserRequest(h, session, { method: 'GET', url: '/auth/session' });
    expect(withTotp.json().data.user.use_totp).toBe(true);
    expect((await h.app.inject({ method: 'GET', url: '/auth/session' })).statusCode).toBe(401);
    const forged = await h.app.inject({
      method: 'GET',
      url: '/auth/session',
      headers: { cookie: `quetzal_session=${'A'.repeat(43)}` },
    });
    expect(forged.statusCode).toBe(401);
    expect(forged.json().errors[0]).toMatchObject({ code: 'AuthenticationException', status: '401' });
    // A dead cookie is cleared.
    expect(setCookies(forged).get('quetzal_session')?.attributes).toContain('Max-Age=0');
    // The bearer token is not a session.
    expect((await h.request((await h.make.user()).token, { method: 'GET', url: '/auth/session' })).statusCode).toBe(401);
  });

  it('signing in again from the same browser replaces its session', async () => {
    const { user, password } = await userWithPassword(h);
    const first = await signIn(h, user.username, password);
    const again = await login(h, { user: user.username, password }, freshIp(), { cookie: first.cookie });
    expect(again.statusCode).toBe(200);
    expect((await browserRequest(h, first, { method: 'GET', url: '/auth/session' })).statusCode).toBe(401);
    expect(await h.db.db.selectFrom('sessions').select('id').where('user_id', '=', user.id).execute()).toHaveLength(1);
  });

  it('POST /auth/logout needs the CSRF header, ends the session at once and clears both cookies', async () => {
    const { user, password } = await userWithPassword(h);
    const session = await signIn(h, user.username, password);
    const other = await signIn(h, user.username, password);

    const noHeader = await browserRequest(h, session, { method: 'POST', url: '/auth/logout' });
    expect(noHeader.statusCode).toBe(403);
    expect(noHeader.json().errors[0]).toMatchObject({
      code: 'AccessDeniedHttpException',
      status: '403',
      detail: 'CSRF token mismatch.',
    });
    const wrongHeader = await browserRequest(h, session, { method: 'POST', url: '/auth/logout', csrf: other.csrf });
    expect(wrongHeader.statusCode).toBe(403);
    expect((await browserRequest(h, session, { method: 'GET', url: '/api/client/account' })).statusCode).toBe(200);

    const out = await browserRequest(h, session, { method: 'POST', url: '/auth/logout', csrf: session.csrf });
    expect(out.statusCode).toBe(204);
    const cleared = setCookies(out);
    expect(cleared.get('quetzal_session')).toMatchObject({ value: '' });
    expect(cleared.get('quetzal_session')!.attributes).toEqual(expect.arrayContaining(['Max-Age=0', 'HttpOnly', 'Path=/']));
    expect(cleared.get('XSRF-TOKEN')).toMatchObject({ value: '' });
    expect(cleared.get('XSRF-TOKEN')!.attributes).toContain('Max-Age=0');

    expect((await browserRequest(h, session, { method: 'GET', url: '/api/client/account' })).statusCode).toBe(401);
    expect((await browserRequest(h, session, { method: 'GET', url: '/auth/session' })).statusCode).toBe(401);
    expect((await browserRequest(h, session, { method: 'POST', url: '/auth/logout', csrf: session.csrf })).statusCode).toBe(401);
    // The user's other browser is still signed in.
    expect((await browserRequest(h, other, { method: 'GET', url: '/auth/session' })).statusCode).toBe(200);
  });

  it('ends a session after 7 days without a request, and deletes it', async () => {
    const { user, password } = await userWithPassword(h);
    const session = await signIn(h, user.username, password);
    h.clock.advance(7 * DAY - 60_000);
    expect((await browserRequest(h, session, { method: 'GET', url: '/api/client/account' })).statusCode).toBe(200);
    // Seen a minute before the limit: a fresh week from there.
    h.clock.advance(7 * DAY - 60_000);
    expect((await browserRequest(h, session, { method: 'GET', url: '/auth/session' })).statusCode).toBe(200);
    h.clock.advance(7 * DAY);
    expect((await browserRequest(h, session, { method: 'GET', url: '/api/client/account' })).statusCode).toBe(401);
    expect(await h.db.db.selectFrom('sessions').select('id').where('user_id', '=', user.id).execute()).toEqual([]);
  });

  it('ends a session 30 days after sign-in however active, and prunes expired rows at sign-ins', async () => {
    const { user, password } = await userWithPassword(h);
    const session = await signIn(h, user.username, password);
    const idle = await signIn(h, user.username, password);
    for (let day = 0; day < 29; day++) {
      h.clock.advance(DAY);
      expect((await browserRequest(h, session, { method: 'GET', url: '/auth/session' })).statusCode, `day ${day + 1}`).toBe(200);
    }
    h.clock.advance(DAY);
    expect((await browserRequest(h, session, { method: 'GET', url: '/auth/session' })).statusCode).toBe(401);
    // The idle one was never presented again; someone's sign-in sweeps it away.
    expect(await h.db.db.selectFrom('sessions').select('id').where('user_id', '=', user.id).execute()).toHaveLength(1);
    await signIn(h, (await userWithPassword(h)).user.username, 'correct horse battery');
    expect(await h.db.db.selectFrom('sessions').select('id').where('user_id', '=', user.id).execute()).toEqual([]);
    expect((await browserRequest(h, idle, { method: 'GET', url: '/auth/session' })).statusCode).toBe(401);
  });

  it('marks a session seen at most once a minute', async () => {
    const { user, password } = await userWithPassword(h);
    const session = await signIn(h, user.username, password);
    const seen = async () =>
      (await h.db.db.selectFrom('sessions').select('last_seen_at').where('user_id', '=', user.id).executeTakeFirstOrThrow())
        .last_seen_at;
    const start = await seen();
    h.clock.advance(30_000);
    await browserRequest(h, session, { method: 'GET', url: '/api/client/account' });
    expect(await seen()).toBe(start);
    h.clock.advance(31_000);
    await browserRequest(h, session, { method: 'GET', url: '/api/client/account' });
    expect(await seen()).toBe(start + 61_000);
  });
});

describeEachDatabase('sign-in behind https', (database) => {
  const h = useHarness(database, { APP_URL: 'https://panel.example.test' });

  it('marks both cookies Secure when APP_URL is https', async () => {
    const { user, password } = await userWithPassword(h);
    const cookies = setCookies((await signIn(h, user.username, password)).response);
    expect(cookies.get('quetzal_session')!.attributes).toContain('Secure');
    expect(cookies.get('XSRF-TOKEN')!.attributes).toContain('Secure');
  });
});

describe('when cookies are Secure', () => {
  it('follows APP_URL’s scheme, whatever its letter case', () => {
    expect(cookiesSecure('https://panel.example.test')).toBe(true);
    expect(cookiesSecure('HTTPS://Panel.example.test/')).toBe(true);
    expect(cookiesSecure('http://127.0.0.1:8080')).toBe(false);
    expect(cookiesSecure('http://https.example.test')).toBe(false);
  });
});
