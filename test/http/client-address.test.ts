import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { clientAddress, proxyTrust } from '../../src/http/client-address.js';
import { addressKey } from '../../src/modules/sessions/sessions.throttle.js';
import { quetzal } from '../cli/helpers.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness, type Harness } from '../helpers/harness.js';
import { userWithPassword } from '../helpers/sign-in.js';

/**
 * Issue 18, the panel's own doors, over real HTTP from several loopback
 * addresses (every 127.x.y.z reaches a service listening on 127.0.0.1): who
 * the client is (TRUST_PROXY, docs/reference/configuration.md), the sign-in throttles keyed by that
 * address, and the cookies' Secure flag.
 */

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** The harness's app, listening on 127.0.0.1 for the describe block (the harness closes it); `send` makes a request from a chosen local address. */
function listening(h: Harness) {
  let port = 0;
  beforeAll(async () => {
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    port = (h.app.server.address() as AddressInfo).port;
  });
  return function send(
    from: string,
    method: string,
    path: string,
    options: { body?: object; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          method,
          path,
          localAddress: from,
          agent: false,
          headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...options.headers },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text === '' ? null : JSON.parse(text) });
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  };
}

/** Tests that check a password a dozen times or more: scrypt takes ~85 ms alone, far longer on a busy machine. */
const SCRYPT_HEAVY = { timeout: 120_000 };

const signInBody = (user: string, password: string) => ({ body: { user, password } });

async function sessionIps(h: Harness, userId: number): Promise<(string | null)[]> {
  const rows = await h.db.db.selectFrom('sessions').select('ip').where('user_id', '=', userId).orderBy('created_at').execute();
  return rows.map((r) => r.ip);
}

async function activityIps(h: Harness, serverId: number): Promise<(string | null)[]> {
  const rows = await h.db.db.selectFrom('activity_logs').select('ip').where('server_id', '=', serverId).orderBy('id').execute();
  return rows.map((r) => r.ip);
}

describeEachDatabase('sign-in from several loopback addresses, no proxy trusted', (database) => {
  const h = useHarness(database);
  const send = listening(h);

  it(
    'an attacker failing from 127.0.0.2 is throttled there, and the user still signs in from 127.0.0.3',
    SCRYPT_HEAVY,
    async () => {
      const { user, password } = await userWithPassword(h);
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++)
        statuses.push((await send('127.0.0.2', 'POST', '/auth/login', signInBody(user.username, `guess ${i}`))).status);
      expect(statuses).toEqual([...Array(5).fill(422), ...Array(7).fill(429)]);
      // Even the right password is refused from the attacker's address.
      const refused = await send('127.0.0.2', 'POST', '/auth/login', signInBody(user.username, password));
      expect(refused.status).toBe(429);
      expect(refused.body.errors[0]).toMatchObject({ code: 'TooManyRequestsHttpException', status: '429' });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(14 * 60);

      const real = await send('127.0.0.3', 'POST', '/auth/login', signInBody(user.email, password));
      expect(real.status).toBe(200);
      expect(real.body.data.user.username).toBe(user.username);
      expect(await sessionIps(h, user.id)).toEqual(['127.0.0.3']);

      // The attacker's address spent its 20 attempts a minute: another account is refused there too, not elsewhere.
      for (let i = 0; i < 7; i++) await send('127.0.0.2', 'POST', '/auth/login', signInBody(`nobody_${i}`, 'whatever it is'));
      const other = await userWithPassword(h);
      expect((await send('127.0.0.2', 'POST', '/auth/login', signInBody(other.user.username, other.password))).status).toBe(429);
      expect((await send('127.0.0.3', 'POST', '/auth/login', signInBody(other.user.username, other.password))).status).toBe(200);
    },
  );

  it(
    'ignores X-Forwarded-For when no proxy is trusted: the throttle, the session and the activity entry see the socket address',
    SCRYPT_HEAVY,
    async () => {
      const { user, password, token } = await userWithPassword(h);
      // Rotating the claimed address buys nothing: the failures all count for 127.0.0.4.
      for (let i = 0; i < 5; i++) {
        const res = await send('127.0.0.4', 'POST', '/auth/login', {
          ...signInBody(user.username, 'wrong password'),
          headers: { 'x-forwarded-for': `203.0.113.${i + 1}` },
        });
        expect(res.status).toBe(422);
      }
      const spoofed = await send('127.0.0.4', 'POST', '/auth/login', {
        ...signInBody(user.username, password),
        headers: { 'x-forwarded-for': '203.0.113.99' },
      });
      expect(spoofed.status).toBe(429);

      expect(
        (
          await send('127.0.0.5', 'POST', '/auth/login', {
            ...signInBody(user.username, password),
            headers: { 'x-forwarded-for': '203.0.113.50' },
          })
        ).status,
      ).toBe(200);
      expect(await sessionIps(h, user.id)).toEqual(['127.0.0.5']);

      const server = await h.make.server(user);
      const created = await send('127.0.0.6', 'POST', `/api/client/servers/${server.uuid}/schedules`, {
        body: { name: 'Nightly' },
        headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': '198.51.100.1' },
      });
      expect(created.status).toBe(200);
      expect(await activityIps(h, server.id)).toEqual(['127.0.0.6']);
    },
  );

  it('checks an API key’s allowed IPs against the socket address, whatever X-Forwarded-For claims', async () => {
    const owner = await h.make.user({ allowedIps: ['127.0.0.7'] });
    const headers = (xff: string) => ({ headers: { authorization: `Bearer ${owner.token}`, 'x-forwarded-for': xff } });
    expect((await send('127.0.0.7', 'GET', '/api/client/account', headers('192.0.2.200'))).status).toBe(200);
    const refused = await send('127.0.0.8', 'GET', '/api/client/account', headers('127.0.0.7'));
    expect(refused.status).toBe(403);
    expect(refused.body.errors[0].code).toBe('AccessDeniedHttpException');
  });
});

describeEachDatabase('X-Forwarded-For with TRUST_PROXY=127.0.0.1', (database) => {
  const h = useHarness(database, { TRUST_PROXY: '127.0.0.1' });
  const send = listening(h);
  const viaProxy = (client: string, extra: Record<string, string> = {}) => ({ 'x-forwarded-for': client, ...extra });

  it('believes the trusted proxy: the session and the activity entry carry the address it forwards', async () => {
    const { user, password, token } = await userWithPassword(h);
    const res = await send('127.0.0.1', 'POST', '/auth/login', {
      ...signInBody(user.username, password),
      headers: viaProxy('198.51.100.23'),
    });
    expect(res.status).toBe(200);
    expect(await sessionIps(h, user.id)).toEqual(['198.51.100.23']);

    const server = await h.make.server(user);
    const created = await send('127.0.0.1', 'POST', `/api/client/servers/${server.uuid}/schedules`, {
      body: { name: 'Nightly' },
      headers: viaProxy('198.51.100.24', { authorization: `Bearer ${token}` }),
    });
    expect(created.status).toBe(200);
    // A chain through the proxy twice (a client behind it, another hop also at 127.0.0.1) is walked to the client.
    await send('127.0.0.1', 'POST', `/api/client/servers/${server.uuid}/schedules`, {
      body: { name: 'Weekly' },
      headers: viaProxy('10.9.8.7, 198.51.100.25, 127.0.0.1', { authorization: `Bearer ${token}` }),
    });
    expect(await activityIps(h, server.id)).toEqual(['198.51.100.24', '198.51.100.25']);
  });

  it('throttles each client behind the proxy apart: one client’s failures do not refuse another', SCRYPT_HEAVY, async () => {
    const { user, password } = await userWithPassword(h);
    for (let i = 0; i < 5; i++) {
      const res = await send('127.0.0.1', 'POST', '/auth/login', {
        ...signInBody(user.username, 'wrong password'),
        headers: viaProxy('198.51.100.66'),
      });
      expect(res.status).toBe(422);
    }
    expect(
      (
        await send('127.0.0.1', 'POST', '/auth/login', {
          ...signInBody(user.username, password),
          headers: viaProxy('198.51.100.66'),
        })
      ).status,
    ).toBe(429);
    expect(
      (
        await send('127.0.0.1', 'POST', '/auth/login', {
          ...signInBody(user.username, password),
          headers: viaProxy('198.51.100.67'),
        })
      ).status,
    ).toBe(200);
  });

  it('trusts exactly 127.0.0.1: another loopback address’s X-Forwarded-For is ignored', SCRYPT_HEAVY, async () => {
    const { user, password, token } = await userWithPassword(h);
    for (let i = 0; i < 5; i++) {
      const res = await send('127.0.0.9', 'POST', '/auth/login', {
        ...signInBody(user.username, 'wrong password'),
        headers: viaProxy(`203.0.113.${i + 1}`),
      });
      expect(res.status).toBe(422);
    }
    expect(
      (
        await send('127.0.0.9', 'POST', '/auth/login', {
          ...signInBody(user.username, password),
          headers: viaProxy('203.0.113.77'),
        })
      ).status,
    ).toBe(429);
    // Claiming to be the proxy's client from elsewhere does not reach that client's budget either.
    expect(
      (
        await send('127.0.0.10', 'POST', '/auth/login', {
          ...signInBody(user.username, password),
          headers: viaProxy('127.0.0.9'),
        })
      ).status,
    ).toBe(200);
    expect(await sessionIps(h, user.id)).toEqual(['127.0.0.10']);

    const server = await h.make.server(user);
    await send('127.0.0.11', 'POST', `/api/client/servers/${server.uuid}/schedules`, {
      body: { name: 'Nightly' },
      headers: viaProxy('198.51.100.1', { authorization: `Bearer ${token}` }),
    });
    expect(await activityIps(h, server.id)).toEqual(['127.0.0.11']);
  });

  it('a forwarded hop that is not an address ends the chain: the proxy itself is then the client, never the text', async () => {
    const { user, token } = await userWithPassword(h);
    const server = await h.make.server(user);
    for (const junk of ['not-an-address', '198.51.100.1, <script>', '999.1.1.1', '198.51.100.1:4431']) {
      const res = await send('127.0.0.1', 'POST', `/api/client/servers/${server.uuid}/schedules`, {
        body: { name: 'x' },
        headers: viaProxy(junk, { authorization: `Bearer ${token}` }),
      });
      expect(res.status, junk).toBe(200);
    }
    expect(await activityIps(h, server.id)).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1']);
  });

  it('checks an API key’s allowed IPs against the forwarded client, and a key limited to the proxy refuses its clients', async () => {
    const client = await h.make.user({ allowedIps: ['198.51.100.0/24'] });
    const auth = (xff: string) => ({ headers: viaProxy(xff, { authorization: `Bearer ${client.token}` }) });
    expect((await send('127.0.0.1', 'GET', '/api/client/account', auth('198.51.100.40'))).status).toBe(200);
    expect((await send('127.0.0.1', 'GET', '/api/client/account', auth('203.0.113.40'))).status).toBe(403);
    // From an untrusted peer the claim is ignored.
    expect((await send('127.0.0.12', 'GET', '/api/client/account', auth('198.51.100.40'))).status).toBe(403);
    // Junk is never taken for an address: the proxy is the client, outside the key's range.
    expect((await send('127.0.0.1', 'GET', '/api/client/account', auth('garbage'))).status).toBe(403);
  });
});

describeEachDatabase('cookies over real HTTP', (database) => {
  const plain = useHarness(database, { APP_URL: 'http://127.0.0.1:8080' });
  const sendPlain = listening(plain);
  const tls = useHarness(database, { APP_URL: 'https://panel.example.test' });
  const sendTls = listening(tls);

  const cookieAttributes = (answer: Answer) =>
    new Map(
      (answer.headers['set-cookie'] ?? []).map((line) => {
        const [pair = '', ...attributes] = line.split(';').map((s) => s.trim());
        return [pair.slice(0, pair.indexOf('=')), attributes] as const;
      }),
    );

  it('marks the session and CSRF cookies Secure when APP_URL is https, and not on plain http', async () => {
    const a = await userWithPassword(plain);
    const overHttp = cookieAttributes(
      await sendPlain('127.0.0.13', 'POST', '/auth/login', signInBody(a.user.username, a.password)),
    );
    expect(overHttp.get('quetzal_session')).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Lax']));
    expect(overHttp.get('quetzal_session')).not.toContain('Secure');
    expect(overHttp.get('XSRF-TOKEN')).not.toContain('Secure');

    const b = await userWithPassword(tls);
    const behindTls = await sendTls('127.0.0.13', 'POST', '/auth/login', signInBody(b.user.username, b.password));
    const cookies = cookieAttributes(behindTls);
    expect(cookies.get('quetzal_session')).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Lax', 'Secure']));
    expect(cookies.get('XSRF-TOKEN')).toEqual(expect.arrayContaining(['SameSite=Lax', 'Secure']));
    // Sign-out's clearing cookies too, or a browser would keep the Secure one.
    const cookie = `quetzal_session=${/quetzal_session=([^;]+)/.exec(behindTls.headers['set-cookie']![0]!)![1]}`;
    const csrf = behindTls.body.data === undefined ? '' : /XSRF-TOKEN=([^;]+)/.exec(behindTls.headers['set-cookie']![1]!)![1]!;
    const out = await sendTls('127.0.0.13', 'POST', '/auth/logout', { headers: { cookie, 'x-xsrf-token': csrf } });
    expect(out.status).toBe(204);
    expect(cookieAttributes(out).get('quetzal_session')).toEqual(expect.arrayContaining(['Max-Age=0', 'Secure']));
  });
});

describe('TRUST_PROXY and the client address', () => {
  const trustProxy = (value: string) => loadConfig({ TRUST_PROXY: value, DATA_DIR: '/nonexistent' }).trustProxy;

  it('reads off, or a list of IP addresses and CIDR ranges; anything else stops the service with a one-line reason', () => {
    expect(trustProxy('')).toBe(false);
    expect(trustProxy('off')).toBe(false);
    expect(trustProxy('OFF')).toBe(false);
    expect(trustProxy(' 127.0.0.1, 10.0.0.0/8 ,::1,fd00::/8')).toEqual(['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8']);
    for (const bad of ['on', 'true', 'loopback', '10.0.0.0/33', '::1/129', '127.0.0.1/8/8', 'proxy.example.test', ',']) {
      expect(() => trustProxy(bad), bad).toThrow(ConfigError);
    }
    expect(() => trustProxy('127.0.0.1,on')).toThrow(
      /TRUST_PROXY must be off or the proxies' IP addresses or CIDR ranges, comma-separated, got "on"/,
    );
  });

  it('stops the real service at once, before it serves anything, when TRUST_PROXY is not a list of addresses', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-trust-'));
    try {
      const result = await quetzal(['serve'], { DATA_DIR: dataDir, PORT: '0', TRUST_PROXY: 'on' });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim().split('\n')).toEqual([expect.stringContaining('TRUST_PROXY must be off or the proxies')]);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);

  it('trusts exactly the listed addresses, an IPv4 one also as seen through an IPv6 socket', () => {
    const trust = proxyTrust(['127.0.0.1', '10.1.0.0/16', 'fd00::/8']);
    expect(trust('127.0.0.1')).toBe(true);
    expect(trust('::ffff:127.0.0.1')).toBe(true);
    expect(trust('127.0.0.2')).toBe(false);
    expect(trust('::1')).toBe(false);
    expect(trust('10.1.200.3')).toBe(true);
    expect(trust('10.2.0.1')).toBe(false);
    expect(trust('fd12::1')).toBe(true);
    expect(trust('not an address')).toBe(false);
  });

  it('walks X-Forwarded-For from the right while the hop that handed it over is trusted', () => {
    const trust = proxyTrust(['127.0.0.1', '10.0.0.0/8']);
    expect(clientAddress('127.0.0.1', '198.51.100.1', trust)).toBe('198.51.100.1');
    expect(clientAddress('127.0.0.1', '203.0.113.9, 198.51.100.1, 10.0.0.5', trust)).toBe('198.51.100.1');
    expect(clientAddress('127.0.0.1', ' , ', trust)).toBe('127.0.0.1');
    expect(clientAddress('127.0.0.1', undefined, trust)).toBe('127.0.0.1');
    expect(clientAddress('127.0.0.1', '198.51.100.1, junk', trust)).toBe('127.0.0.1');
    expect(clientAddress('192.0.2.50', '198.51.100.1', trust)).toBe('192.0.2.50');
    expect(clientAddress('127.0.0.1', '198.51.100.1', null)).toBe('127.0.0.1');
  });

  it("counts an IPv6 address by its /64 and an IPv4-mapped one as IPv4 (the sign-in throttles' key)", () => {
    expect(addressKey('198.51.100.7')).toBe('198.51.100.7');
    expect(addressKey('::ffff:198.51.100.7')).toBe('198.51.100.7');
    expect(addressKey('2001:db8:1:2::5')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:0DB8:0001:0002:ffff:0:0:1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressKey('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64');
  });
});
