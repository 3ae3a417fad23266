import { afterEach, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { ServerRow } from '../../src/db/schema.js';
import { daemonServer } from '../../src/modules/servers/servers.service.js';
import { ECHO_STARTUP } from '../helpers/containment.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { eventually, socketAddress, useLiveHarness, websocketCredentials } from './helpers.js';

/**
 * The live console's actions are logged with the same client address as the
 * HTTP routes (issue 18): with TRUST_PROXY=127.0.0.1, the address the proxy
 * forwards when the socket comes through it, the socket's own otherwise.
 */
describeEachDatabase('websocket actions and the client address', (database) => {
  const h = useLiveHarness(database, { TRUST_PROXY: '127.0.0.1' });
  const started: ServerRow[] = [];
  afterEach(async () => {
    for (const server of started.splice(0)) await h.daemon.power(daemonServer(server), 'kill').catch(() => undefined);
    await h.jobs.idle();
  });

  /** A socket opened from `from` with this X-Forwarded-For, authenticated; the events it received. */
  async function socketFrom(from: string, forwardedFor: string, jwt: string, server: ServerRow) {
    const events: string[] = [];
    const ws = new WebSocket(socketAddress(h, server), { localAddress: from, headers: { 'x-forwarded-for': forwardedFor } });
    ws.on('message', (data: Buffer) => events.push((JSON.parse(data.toString('utf8')) as { event: string }).event));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.send(JSON.stringify({ event: 'auth', args: [jwt] }));
    await eventually(() => events.includes('auth success'), 5_000, 'auth success');
    return ws;
  }

  const entries = async (server: ServerRow) =>
    (
      await h.db.db.selectFrom('activity_logs').select(['event', 'ip']).where('server_id', '=', server.id).orderBy('id').execute()
    ).map((r) => [r.event, r.ip]);

  it('logs a power action through the trusted proxy with the forwarded address, and from elsewhere with the socket’s', async () => {
    const { owner, server } = await h.make.ownedServer({ startup: ECHO_STARTUP });
    started.push(server);
    const { token: jwt } = await websocketCredentials(h, owner.token, server);

    const proxied = await socketFrom('127.0.0.1', '198.51.100.77', jwt, server);
    proxied.send(JSON.stringify({ event: 'set state', args: ['start'] }));
    await eventually(async () => (await entries(server)).length === 1, 10_000, 'the start logged');

    const direct = await socketFrom('127.0.0.2', '198.51.100.78', jwt, server);
    direct.send(JSON.stringify({ event: 'set state', args: ['kill'] }));
    await eventually(async () => (await entries(server)).length === 2, 10_000, 'the kill logged');

    expect(await entries(server)).toEqual([
      ['server:power.start', '198.51.100.77'],
      ['server:power.kill', '127.0.0.2'],
    ]);
    proxied.close();
    direct.close();
  });
});
