import fs from 'node:fs';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { bootstrapFirstStart } from '../../src/bootstrap.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { eventually } from '../websocket/helpers.js';

/** The first start's `demo` server (docs/reference/eggs-and-installs.md): it starts, prints, answers a console command and stops on its stop command. */
describeEachDatabase('demo server', (database) => {
  const h = useHarness(database);
  let token = '';
  let identifier = '';
  afterAll(async () => {
    if (identifier)
      await h.request(token, { method: 'POST', url: `/api/client/servers/${identifier}/power`, payload: { signal: 'kill' } });
  });

  it('starts and shows output, echoes a command, and its stop command ends it', async () => {
    const credentials = await bootstrapFirstStart({ db: h.db.db, dialect: h.db.dialect, daemon: h.daemon, clock: h.clock });
    expect(credentials).not.toBeNull();
    token = credentials!.token;
    identifier = credentials!.serverIdentifier;
    const base = `/api/client/servers/${identifier}`;
    const server = await h.db.db.selectFrom('servers').selectAll().where('uuid_short', '=', identifier).executeTakeFirstOrThrow();
    const log = path.join(h.dataDir, 'logs', `${server.uuid}.log`);
    const logText = () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '');

    expect((await h.request(token, { method: 'POST', url: `${base}/power`, payload: { signal: 'start' } })).statusCode).toBe(204);
    await eventually(() => logText().includes('Quetzal demo server started'), 10_000, 'the greeting');
    expect((await h.request(token, { method: 'POST', url: `${base}/command`, payload: { command: 'hello' } })).statusCode).toBe(
      204,
    );
    await eventually(() => logText().includes('demo> hello'), 10_000, 'the echo');
    expect((await h.request(token, { method: 'POST', url: `${base}/power`, payload: { signal: 'stop' } })).statusCode).toBe(204);
    await eventually(
      async () =>
        (await h.request(token, { method: 'GET', url: `${base}/resources` })).json().attributes.current_state === 'offline',
      10_000,
      'the stop',
    );
    expect(logText()).toContain('Stopping.');
  });
});
