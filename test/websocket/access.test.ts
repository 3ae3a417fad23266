import { expect, it } from 'vitest';
import { setServerStatusUnlessRestoring } from '../../src/modules/servers/servers.repository.js';
import { quetzalJson } from '../cli/helpers.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { connected, socketAddress, TestSocket, useLiveHarness, websocketCredentials } from './helpers.js';

/** Losing the server or a permission while connected (docs/reference/power-and-console.md#websocket): checked on every auth, every action and periodically. */
describeEachDatabase('websocket access while connected', (database) => {
  const h = useLiveHarness(database);

  it('closes the sockets of a server suspended by the admin command line in another process within 5 s', async () => {
    const { owner, server } = await h.make.ownedServer();
    const sockets = [await connected(h, owner.token, server), await connected(h, owner.token, server)];
    await quetzalJson(['server:status', '--server', server.uuid, '--set', 'suspended'], {
      DATA_DIR: h.dataDir,
      DATABASE_URL: h.db.url,
      LOG_LEVEL: 'warn',
    });
    const suspendedAt = Date.now();
    for (const socket of sockets) {
      expect((await socket.waitFor('daemon error', () => true, 5_000)).args?.[0]).toMatch(/suspended/);
      expect(await socket.closed).toEqual({ code: 4409, reason: 'server suspended' });
    }
    expect(Date.now() - suspendedAt).toBeLessThan(5_000);

    // And a new socket is turned away at its auth.
    const late = await TestSocket.open(socketAddress(h, server));
    await setServerStatusUnlessRestoring(h.db.db, server.id, null, h.clock.now());
    const { token } = await websocketCredentials(h, owner.token, server);
    await setServerStatusUnlessRestoring(h.db.db, server.id, 'suspended', h.clock.now());
    late.send('auth', [token]);
    expect((await late.closed).code).toBe(4409);
  });

  it('refuses a command at once once the permission is gone, and drops the socket when the subuser is removed', async () => {
    const { server } = await h.make.ownedServer();
    const sub = await h.make.subuser(server, ['websocket.connect', 'control.console']);
    const socket = await connected(h, sub.token, server);
    await h.db.db
      .updateTable('subusers')
      .set({ permissions: JSON.stringify(['websocket.connect']) })
      .where('user_id', '=', sub.user.id)
      .execute();
    socket.send('send command', ['say hi']);
    expect((await socket.waitFor('daemon error')).args).toEqual(['This action is unauthorized.']);

    await h.db.db.deleteFrom('subusers').where('user_id', '=', sub.user.id).execute();
    // The periodic re-check (every 30 s, on the injected clock too) finds the subuser gone.
    h.clock.advance(31_000);
    expect((await socket.waitFor('jwt error', () => true, 5_000)).args).toEqual(['jwt: created too far in past (denylist)']);
    expect(await socket.closed).toEqual({ code: 4403, reason: 'access to this server was revoked' });
  });

  it('drops the socket of a subuser who loses websocket.connect, and refuses their old token at auth', async () => {
    const { server } = await h.make.ownedServer();
    const sub = await h.make.subuser(server, ['websocket.connect']);
    const { token } = await websocketCredentials(h, sub.token, server);
    const socket = await connected(h, sub.token, server);
    await h.db.db
      .updateTable('subusers')
      .set({ permissions: JSON.stringify(['control.console']) })
      .where('user_id', '=', sub.user.id)
      .execute();
    h.clock.advance(31_000);
    expect((await socket.closed).code).toBe(4403);

    const again = await TestSocket.open(socketAddress(h, server));
    again.send('auth', [token]);
    expect((await again.waitFor('jwt error')).args).toEqual(['jwt: missing connect permission']);
    expect((await again.closed).code).toBe(4401);
  });

  it('drops the socket of a user who was deleted', async () => {
    const { server } = await h.make.ownedServer();
    const sub = await h.make.subuser(server, ['websocket.connect']);
    const socket = await connected(h, sub.token, server);
    await h.db.db.deleteFrom('subusers').where('user_id', '=', sub.user.id).execute();
    await h.db.db.deleteFrom('api_keys').where('user_id', '=', sub.user.id).execute();
    await h.db.db.deleteFrom('users').where('id', '=', sub.user.id).execute();
    h.clock.advance(31_000);
    expect((await socket.closed).code).toBe(4403);
  });

  it('tells sockets that may read backups when a backup completes, as Wings names it, and when a restore completes', async () => {
    const { owner, server } = await h.make.ownedServer();
    const reader = await h.make.subuser(server, ['websocket.connect', 'backup.read']);
    const blind = await h.make.subuser(server, ['websocket.connect']);
    const sockets = {
      owner: await connected(h, owner.token, server),
      reader: await connected(h, reader.token, server),
      blind: await connected(h, blind.token, server),
    };

    const created = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid_short}/backups`,
      payload: {},
    });
    expect(created.statusCode).toBe(200);
    const uuid = created.json().attributes.uuid as string;
    await h.jobs.idle();
    for (const socket of [sockets.owner, sockets.reader]) {
      const frame = await socket.waitFor(`backup completed:${uuid}`);
      const payload = JSON.parse(frame.args![0]!) as Record<string, unknown>;
      expect(payload).toEqual({
        uuid,
        is_successful: true,
        checksum: expect.stringMatching(/^[0-9a-f]{40}$/),
        checksum_type: 'sha1',
        file_size: expect.any(Number),
      });
      expect(payload.file_size).toBeGreaterThan(0);
    }

    const restored = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid_short}/backups/${uuid}/restore`,
      payload: { truncate: false },
    });
    expect(restored.statusCode).toBe(204);
    await h.jobs.idle();
    for (const socket of Object.values(sockets)) {
      expect(await socket.waitFor('backup restore completed')).toEqual({ event: 'backup restore completed', args: [''] });
    }
    expect(sockets.blind.frames.some((f) => f.event.startsWith('backup completed'))).toBe(false);
    for (const socket of Object.values(sockets)) socket.close();
  });

  it("answers throttled past Wings' limits, and refuses a user's 21st socket on one server", async () => {
    const { owner, server } = await h.make.ownedServer();
    const socket = await connected(h, owner.token, server);
    for (let i = 0; i < 8; i++) socket.send('send stats');
    expect(await socket.waitFor('throttled')).toEqual({ event: 'throttled', args: ['send stats'] });
    // Told once, not once a frame.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(socket.all('throttled')).toHaveLength(1);

    const more: TestSocket[] = [];
    for (let i = 0; i < 19; i++) more.push(await connected(h, owner.token, server));
    const extra = await TestSocket.open(socketAddress(h, server));
    extra.send('auth', [(await websocketCredentials(h, owner.token, server)).token]);
    expect((await extra.closed).code).toBe(4430);
    for (const s of [socket, ...more]) s.close();
  });
});
