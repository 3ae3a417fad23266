import net from 'node:net';
import { PteroClient } from '@devnote-dev/pterojs';
import { afterEach, beforeAll, expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { daemonServer } from '../../src/modules/servers/servers.service.js';
import { ECHO_STARTUP } from '../helpers/containment.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { eventually } from './helpers.js';

/** A port nobody listens on now (the token route names APP_URL, so the app must listen where APP_URL says). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * The real `@devnote-dev/pterojs` websocket manager, unchanged: it asks the
 * token route, connects to the URL it names, authenticates with the token
 * and hears the console (docs/reference/power-and-console.md#websocket).
 */
describeEachDatabase('pterojs websocket manager', (database) => {
  const env: Record<string, string> = {};
  beforeAll(async () => {
    env.APP_URL = `http://127.0.0.1:${await freePort()}`;
  });
  const h = useHarness(database, env);
  beforeAll(async () => {
    await h.app.listen({ host: '127.0.0.1', port: Number(new URL(env.APP_URL!).port) });
  });
  const started: ServerRow[] = [];
  afterEach(async () => {
    for (const server of started.splice(0)) await h.daemon.power(daemonServer(server), 'kill').catch(() => undefined);
    await h.jobs.idle();
  });

  it('connects, authenticates, starts the server, sends a command and receives its output, status and stats', async () => {
    const { owner, server } = await h.make.ownedServer({ startup: ECHO_STARTUP });
    started.push(server);
    const client = new PteroClient(env.APP_URL!, owner.token);
    const shard = client.addSocketServer(server.uuid_short);
    const output: string[] = [];
    const statuses: string[] = [];
    const errors: string[] = [];
    shard.on('serverOutput', (line) => output.push(line));
    shard.on('statusUpdate', (status) => statuses.push(status));
    shard.on('error', (message) => errors.push(message));
    const authenticated = new Promise<void>((resolve) => shard.once('authSuccess', () => resolve()));
    try {
      await shard.connect();
      await authenticated;
      await eventually(() => statuses.includes('offline'));

      expect(await shard.request('setState', 'start')).toBe('starting');
      await eventually(() => statuses.includes('running') && output.includes('ready'), 10_000);
      await shard.request('sendCommand', 'say from pterojs');
      await eventually(() => output.includes('> say from pterojs'));

      // Typed void by pterojs, resolved with the camel-cased stats object.
      const stats = (await shard.request('sendStats')) as unknown as { state: string; memoryBytes: number };
      expect(stats).toMatchObject({ state: 'running' });
      expect(stats.memoryBytes).toBeGreaterThan(0);

      const activity = await h.db.db
        .selectFrom('activity_logs')
        .select(['event', 'actor_id', 'api_key_id'])
        .where('server_id', '=', server.id)
        .orderBy('id')
        .execute();
      expect(activity).toEqual([
        { event: 'server:power.start', actor_id: owner.user.id, api_key_id: null },
        { event: 'server:console.command', actor_id: owner.user.id, api_key_id: null },
      ]);
      expect(errors).toEqual([]);
    } finally {
      client.disconnect();
    }
  });
});
