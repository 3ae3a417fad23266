import { SignJWT } from 'jose';
import { expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { loadAppKey } from '../../src/app-key.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { connected, socketAddress, TestSocket, useLiveHarness, websocketCredentials } from './helpers.js';

/** The socket's `auth` frame (docs/reference/power-and-console.md#websocket): Wings' answers and close on a refused token. */
describeEachDatabase('websocket authentication', (database) => {
  const h = useLiveHarness(database);

  it('answers auth success, the status, and (the server being offline) one stats frame', async () => {
    const { owner, server } = await h.make.ownedServer();
    const socket = await connected(h, owner.token, server);
    expect(socket.frames[0]).toEqual({ event: 'auth success' });
    expect(socket.frames[1]).toEqual({ event: 'status', args: ['offline'] });
    const stats = await socket.waitFor('stats');
    expect(JSON.parse(stats.args![0]!)).toEqual({
      memory_bytes: 0,
      memory_limit_bytes: 0,
      cpu_absolute: 0,
      network: { rx_bytes: 0, tx_bytes: 0 },
      uptime: 0,
      state: 'offline',
      disk_bytes: expect.any(Number),
    });
    socket.close();
  });

  it('refuses a token with a bad signature, for another server, or expired: jwt error, then the socket closes', async () => {
    const { owner, server } = await h.make.ownedServer();
    const other = await h.make.server(owner.user);
    const { token } = await websocketCredentials(h, owner.token, server);

    const forged = `${token.slice(0, -4)}${token.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
    const cases: [string, string][] = [
      [forged, 'jwt: HMAC verification failed'],
      [(await websocketCredentials(h, owner.token, other)).token, 'jwt: server uuid mismatch'],
      ['not-a-token', 'jwt: malformed token'],
    ];
    for (const [jwt, reason] of cases) {
      const socket = await TestSocket.open(socketAddress(h, server));
      socket.send('auth', [jwt]);
      expect(await socket.waitFor('jwt error')).toEqual({ event: 'jwt error', args: [reason] });
      expect(await socket.closed).toEqual({ code: 4401, reason });
      expect(socket.all('auth success')).toEqual([]);
    }

    // Expired: signed with the right key ten minutes and a second ago.
    const socket = await TestSocket.open(socketAddress(h, server));
    const issued = Math.floor(h.clock.now() / 1000) - 601;
    const expired = await new SignJWT({ server_uuid: server.uuid, user_uuid: owner.user.uuid, permissions: ['*'] })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('http://quetzal.test')
      .setIssuedAt(issued)
      .setExpirationTime(issued + 600)
      .sign(loadAppKey(h.dataDir, {}));
    socket.send('auth', [expired]);
    expect(await socket.waitFor('jwt error')).toEqual({ event: 'jwt error', args: ['jwt: exp claim is invalid'] });
    expect((await socket.closed).code).toBe(4401);
  });

  it('refuses a token signed with another key, and one without websocket.connect', async () => {
    const { owner, server } = await h.make.ownedServer();
    const now = Math.floor(h.clock.now() / 1000);
    const sign = (key: Uint8Array, permissions: string[]) =>
      new SignJWT({ server_uuid: server.uuid, user_uuid: owner.user.uuid, permissions })
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuer('http://quetzal.test')
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .sign(key);
    for (const [jwt, reason] of [
      [await sign(Buffer.alloc(32, 1), ['*']), 'jwt: HMAC verification failed'],
      [await sign(loadAppKey(h.dataDir, {}), ['control.console']), 'jwt: missing connect permission'],
    ] as const) {
      const socket = await TestSocket.open(socketAddress(h, server));
      socket.send('auth', [jwt]);
      expect((await socket.waitFor('jwt error')).args).toEqual([reason]);
      expect((await socket.closed).code).toBe(4401);
    }
  });

  it('answers frames before auth with "jwt: no jwt present" and ignores what it cannot parse', async () => {
    const { owner, server } = await h.make.ownedServer();
    const socket = await TestSocket.open(socketAddress(h, server));
    socket.ws.send('not json');
    socket.ws.send(JSON.stringify({ event: 42 }));
    socket.send('send command', ['say hi']);
    expect(await socket.waitFor('jwt error')).toEqual({ event: 'jwt error', args: ['jwt: no jwt present'] });
    const { token } = await websocketCredentials(h, owner.token, server);
    // Pterodactyl's front end sends [null] for no argument; an auth frame is args joined.
    socket.send('auth', [token]);
    await socket.waitFor('auth success');
    socket.ws.send(JSON.stringify({ event: 'send stats', args: [null] }));
    await socket.waitFor('stats');
    await socket.waitFor('stats');
    expect(socket.frames.filter((f) => f.event === 'jwt error')).toHaveLength(1);
    socket.close();
  });

  it('is a 404 before any upgrade for an unknown server, a 400 for a plain GET', async () => {
    const missing = `${h.base.replace(/^http/, 'ws')}/api/servers/00000000-0000-4000-8000-000000000000/ws`;
    await expect(TestSocket.open(missing)).rejects.toThrow(/404/);
    const { server } = await h.make.ownedServer();
    const plain = await fetch(`${h.base}/api/servers/${server.uuid}/ws`);
    expect(plain.status).toBe(400);
    expect(((await plain.json()) as { errors: { code: string }[] }).errors[0]?.code).toBe('BadRequestHttpException');
  });

  it('closes a frame over 4 KiB (1009)', async () => {
    const { server } = await h.make.ownedServer();
    const socket = await TestSocket.open(socketAddress(h, server));
    socket.send('auth', ['x'.repeat(5000)]);
    expect((await socket.closed).code).toBe(1009);
  });

  it('says token expiring a minute before exp and takes a renewal without a second status', async () => {
    const { owner, server } = await h.make.ownedServer();
    const socket = await connected(h, owner.token, server);
    h.clock.advance(9 * 60_000 + 5_000);
    await socket.waitFor('token expiring');
    socket.send('auth', [(await websocketCredentials(h, owner.token, server)).token]);
    await socket.waitFor('auth success');
    // A renewal is not a new connection: no second status (panel issue 2077).
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(socket.all('status')).toHaveLength(1);
    socket.close();
  });

  it('says token expired at exp, then answers jwt error until a renewal, which brings the status again', async () => {
    const { owner, server } = await h.make.ownedServer();
    const socket = await connected(h, owner.token, server);
    h.clock.advance(10 * 60_000);
    await socket.waitFor('token expired');
    socket.send('send stats');
    expect((await socket.waitFor('jwt error')).args).toEqual(['jwt: exp claim is invalid']);
    socket.send('auth', [(await websocketCredentials(h, owner.token, server)).token]);
    await socket.waitFor('auth success');
    await socket.waitFor('status');
    expect(socket.ws.readyState).toBe(WebSocket.OPEN);
    socket.close();
  });

  it('refuses a renewal for another user', async () => {
    const { owner, server } = await h.make.ownedServer();
    const admin = await h.make.user({ admin: true });
    const socket = await connected(h, owner.token, server);
    socket.send('auth', [(await websocketCredentials(h, admin.token, server)).token]);
    expect((await socket.waitFor('jwt error')).args).toEqual(['jwt: token is for another user']);
    expect((await socket.closed).code).toBe(4401);
  });
});
