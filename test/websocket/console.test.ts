import { afterEach, expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { daemonServer } from '../../src/modules/servers/servers.service.js';
import { ECHO_STARTUP } from '../helpers/containment.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { connected, eventually, type TestSocket, useLiveHarness } from './helpers.js';

/** Console, power and stats over the socket (docs/reference/power-and-console.md#websocket) against real processes run by the local daemon. */
describeEachDatabase('websocket console and power', (database) => {
  const h = useLiveHarness(database);
  const started: ServerRow[] = [];
  afterEach(async () => {
    for (const server of started.splice(0)) await h.daemon.power(daemonServer(server), 'kill').catch(() => undefined);
    await h.jobs.idle();
  });

  const activity = async (server: ServerRow) =>
    (await h.db.db.selectFrom('activity_logs').selectAll().where('server_id', '=', server.id).orderBy('id').execute()).map(
      (r) => ({
        event: r.event,
        actor_id: r.actor_id,
        api_key_id: r.api_key_id,
        ip: r.ip,
        properties: JSON.parse(r.properties) as unknown,
      }),
    );

  async function runningEcho(socket: TestSocket) {
    socket.send('set state', ['start']);
    await socket.waitFor('status', (f) => f.args?.[0] === 'running');
    await socket.waitFor('console output', (f) => f.args?.[0] === 'ready');
  }

  it('starts the server, streams its output line by line, and sends commands to its standard input, logged for the user', async () => {
    const { owner, server } = await h.make.ownedServer({ startup: ECHO_STARTUP });
    started.push(server);
    const socket = await connected(h, owner.token, server);
    await runningEcho(socket);
    expect(socket.all('status').map((f) => f.args?.[0])).toEqual(['offline', 'starting', 'running']);

    for (const line of ['say one', 'say two', 'say three']) socket.send('send command', [line]);
    for (const line of ['say one', 'say two', 'say three'])
      await socket.waitFor('console output', (f) => f.args?.[0] === `> ${line}`);
    expect(socket.lines().filter((l) => l.startsWith('> '))).toEqual(['> say one', '> say two', '> say three']);

    expect(await activity(server)).toEqual([
      { event: 'server:power.start', actor_id: owner.user.id, api_key_id: null, ip: '127.0.0.1', properties: {} },
      ...['say one', 'say two', 'say three'].map((command) => ({
        event: 'server:console.command',
        actor_id: owner.user.id,
        api_key_id: null,
        ip: '127.0.0.1',
        properties: { command },
      })),
    ]);

    socket.send('set state', ['stop']);
    await socket.waitFor('status', (f) => f.args?.[0] === 'offline', 15_000);
    await eventually(async () => (await activity(server)).some((e) => e.event === 'server:power.stop'));
    socket.close();
  });

  it("checks each action against the subuser's permissions: refused ones are a daemon error and change nothing", async () => {
    const { server } = await h.make.ownedServer({ startup: ECHO_STARTUP });
    started.push(server);
    const sub = await h.make.subuser(server, ['websocket.connect', 'control.start']);
    const socket = await connected(h, sub.token, server);
    await runningEcho(socket);

    socket.send('send command', ['say hi']);
    expect(await socket.waitFor('daemon error')).toEqual({ event: 'daemon error', args: ['This action is unauthorized.'] });
    for (const signal of ['stop', 'kill', 'restart']) {
      socket.send('set state', [signal]);
      expect((await socket.waitFor('daemon error')).args).toEqual(['This action is unauthorized.']);
    }
    expect(await h.daemon.state(daemonServer(server))).toBe('running');
    expect((await activity(server)).map((e) => [e.event, e.actor_id])).toEqual([['server:power.start', sub.user.id]]);

    // A permission granted after the token was issued needs a new token (as on Wings): the token's list bounds the socket.
    await h.db.db
      .updateTable('subusers')
      .set({ permissions: JSON.stringify(['websocket.connect', 'control.start', 'control.stop']) })
      .where('server_id', '=', server.id)
      .execute();
    // Past Wings' limit for set state (4, then one a second): wait for room.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    socket.send('set state', ['kill']);
    expect((await socket.waitFor('daemon error')).args).toEqual(['This action is unauthorized.']);
    socket.close();
  });

  it("says the daemon's error for a command to a stopped server, and for an unknown power action", async () => {
    const { owner, server } = await h.make.ownedServer({ startup: ECHO_STARTUP });
    const socket = await connected(h, owner.token, server);
    socket.send('send command', ['say hi']);
    expect(await socket.waitFor('daemon error')).toEqual({ event: 'daemon error', args: ['The server is not running.'] });
    socket.send('set state', ['explode']);
    expect((await socket.waitFor('daemon error')).args?.[0]).toMatch(/not a power action/);
    expect(await activity(server)).toEqual([]);
    socket.close();
  });

  it('answers send logs with the last 150 lines of the console', async () => {
    const { owner, server } = await h.make.ownedServer({ startup: ECHO_STARTUP });
    started.push(server);
    const socket = await connected(h, owner.token, server);
    await runningEcho(socket);
    // Written straight to the server's console log, as a chatty server would.
    for (let i = 0; i < 200; i++) await h.daemon.sendCommand(daemonServer(server), `line ${i}`);
    await socket.waitFor('console output', (f) => f.args?.[0] === '> line 199');

    const later = await connected(h, owner.token, server);
    later.send('send logs');
    await later.waitFor('console output', (f) => f.args?.[0] === '> line 199');
    const history = later.lines();
    expect(history).toHaveLength(150);
    expect(history[0]).toBe('> line 50');
    expect(history.at(-1)).toBe('> line 199');
    socket.close();
    later.close();
  });

  it('sends stats about every 2 s while the server runs, with measured figures', async () => {
    const { owner, server } = await h.make.ownedServer({ startup: ECHO_STARTUP, limits: { memoryMiB: 256 } });
    started.push(server);
    const socket = await connected(h, owner.token, server);
    await runningEcho(socket);
    const first = await socket.waitFor('stats', (f) => (JSON.parse(f.args![0]!) as { state: string }).state === 'running', 5_000);
    const at = Date.now();
    const second = await socket.waitFor('stats', () => true, 5_000);
    const gap = Date.now() - at;
    expect(gap).toBeGreaterThan(1_000);
    // About every 2 s: a sample that waits on a busy machine's disk walk may come late, never early.
    expect(gap).toBeLessThan(4_500);
    for (const frame of [first, second]) {
      const stats = JSON.parse(frame.args![0]!) as Record<string, unknown>;
      expect(Object.keys(stats).sort()).toEqual([
        'cpu_absolute',
        'disk_bytes',
        'memory_bytes',
        'memory_limit_bytes',
        'network',
        'state',
        'uptime',
      ]);
      expect(stats.memory_limit_bytes).toBe(256 * 1024 * 1024);
      expect(stats.state).toBe('running');
      expect(typeof stats.cpu_absolute).toBe('number');
      expect(stats.network).toEqual({ rx_bytes: 0, tx_bytes: 0 });
      expect(stats.disk_bytes).toBeGreaterThan(0);
    }
    const last = JSON.parse(second.args![0]!) as { memory_bytes: number; uptime: number };
    expect(last.memory_bytes).toBeGreaterThan(1024 * 1024);
    expect(last.uptime).toBeGreaterThan(0);
    socket.close();
  });
});
