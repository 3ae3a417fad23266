import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { APP_KEY_FILE, decodeAppKey, loadAppKey } from '../../src/app-key.js';
import { loadConfig } from '../../src/config.js';
import { socketUrl } from '../../src/modules/websocket/websocket.service.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

/** GET /servers/{server}/websocket (docs/reference/power-and-console.md#websocket): Pterodactyl's answer and token. */
describeEachDatabase('websocket token route', (database) => {
  const h = useHarness(database);
  const key = () => loadAppKey(h.dataDir, {});
  const get = (token: string, server: { uuid_short: string }) =>
    h.request(token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}/websocket` });

  it("answers {data: {token, socket}} with an HS256 token carrying Pterodactyl's claims for the owner", async () => {
    const { owner, server } = await h.make.ownedServer();
    const res = await get(owner.token, server);
    expect(res.statusCode).toBe(200);
    const body = res.json() as { data: { token: string; socket: string } };
    expect(Object.keys(body)).toEqual(['data']);
    expect(Object.keys(body.data).sort()).toEqual(['socket', 'token']);
    expect(body.data.socket).toBe(`ws://quetzal.test/api/servers/${server.uuid}/ws`);

    const jti = createHash('md5').update(`${owner.user.id}${server.uuid}`).digest('hex');
    expect(decodeProtectedHeader(body.data.token)).toEqual({ alg: 'HS256', typ: 'JWT', jti });
    const { payload } = await jwtVerify(body.data.token, key(), {
      algorithms: ['HS256'],
      issuer: 'http://quetzal.test',
      currentDate: new Date(h.clock.now()),
    });
    const now = Math.floor(h.clock.now() / 1000);
    expect(payload).toMatchObject({
      server_uuid: server.uuid,
      user_uuid: owner.user.uuid,
      user_id: owner.user.id,
      permissions: ['*'],
      iss: 'http://quetzal.test',
      aud: 'http://quetzal.test',
      jti,
      iat: now,
      nbf: now - 300,
      exp: now + 600,
    });
    expect(payload.unique_id).toMatch(/^[A-Za-z0-9_-]{16}$/);
    // A fresh one every time (unique_id), all valid for ten minutes.
    expect((await get(owner.token, server)).json().data.token).not.toBe(body.data.token);
  });

  it("gives a root admin '*' and Pterodactyl's admin grants, and a subuser exactly their permissions", async () => {
    const { server } = await h.make.ownedServer();
    const admin = await h.make.user({ admin: true });
    const adminToken = (await get(admin.token, server)).json().data.token as string;
    expect((await jwtVerify(adminToken, key())).payload.permissions).toEqual([
      '*',
      'admin.websocket.errors',
      'admin.websocket.install',
      'admin.websocket.transfer',
    ]);
    const sub = await h.make.subuser(server, ['websocket.connect', 'control.console']);
    const subToken = (await get(sub.token, server)).json().data.token as string;
    expect((await jwtVerify(subToken, key())).payload).toMatchObject({
      permissions: ['websocket.connect', 'control.console'],
      user_uuid: sub.user.uuid,
    });
  });

  it('is a 403 without websocket.connect, a 404 for a server the caller cannot see, a 409 for a suspended server', async () => {
    const { owner, server } = await h.make.ownedServer();
    const sub = await h.make.subuser(server, ['control.console', 'control.start']);
    const forbidden = await get(sub.token, server);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().errors[0]).toMatchObject({ code: 'AccessDeniedHttpException', status: '403' });

    const stranger = await h.make.user();
    expect((await get(stranger.token, server)).statusCode).toBe(404);

    await h.make.setStatus(server, 'suspended');
    expect((await get(owner.token, server)).statusCode).toBe(409);
  });

  it('is refused to a revoked key (a revoked key mints no tokens)', async () => {
    const { owner, server } = await h.make.ownedServer();
    await h.db.db.updateTable('api_keys').set({ revoked_at: h.clock.now() }).where('user_id', '=', owner.user.id).execute();
    expect((await get(owner.token, server)).statusCode).toBe(401);
  });
});

describe('the socket URL and the key', () => {
  it("is wss:// behind https, keeps APP_URL's host, port and path", () => {
    const uuid = '0b5f0a52-3b5c-4a4e-9f0e-2f4f2b4b2b4b';
    expect(socketUrl('https://panel.example.com', uuid)).toBe(`wss://panel.example.com/api/servers/${uuid}/ws`);
    expect(socketUrl('http://10.0.0.5:8080', uuid)).toBe(`ws://10.0.0.5:8080/api/servers/${uuid}/ws`);
    expect(socketUrl('https://example.com/quetzal/', uuid)).toBe(`wss://example.com/quetzal/api/servers/${uuid}/ws`);
  });

  it('generates the key once into DATA_DIR/app-key (0600) and reuses it; APP_KEY wins; a short APP_KEY is refused', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-key-'));
    try {
      const first = loadAppKey(dir, {});
      expect(first.length).toBe(32);
      const file = path.join(dir, APP_KEY_FILE);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(fs.readFileSync(file, 'utf8')).toMatch(/^base64:[A-Za-z0-9+/]{43}=\n$/);
      expect(loadAppKey(dir, {}).equals(first)).toBe(true);
      const given = Buffer.alloc(32, 7).toString('base64');
      expect(loadAppKey(dir, { APP_KEY: given }).equals(Buffer.alloc(32, 7))).toBe(true);
      expect(decodeAppKey(`base64:${given}`)?.equals(Buffer.alloc(32, 7))).toBe(true);
      expect(decodeAppKey('too-short')).toBeNull();
      expect(() => loadConfig({ APP_KEY: 'c2hvcnQ=' })).toThrow(/APP_KEY/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
