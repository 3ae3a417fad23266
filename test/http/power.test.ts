import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { ECHO_STARTUP } from '../helpers/containment.js';
import { useHarness, type Harness } from '../helpers/harness.js';

/** Polls until `check` holds (real child processes take a moment), failing after `timeoutMs`. */
async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Power, console and resources (docs/reference/servers.md#the-server-routes) against real child processes run by the local daemon. */
describeEachDatabase('power, console and resources', (database) => {
  const h = useHarness(database);
  afterEach(async () => {
    await h.jobs.idle();
  });

  const power = (token: string, server: ServerRow, signal: unknown) =>
    h.request(token, { method: 'POST', url: `/api/client/servers/${server.uuid_short}/power`, payload: { signal } });
  const command = (token: string, server: ServerRow, line: unknown) =>
    h.request(token, { method: 'POST', url: `/api/client/servers/${server.uuid_short}/command`, payload: { command: line } });
  const state = async (token: string, server: ServerRow) => {
    const res = await h.request(token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}/resources` });
    expect(res.statusCode).toBe(200);
    return res.json().attributes.current_state as string;
  };
  const log = (server: ServerRow, suffix = '') => {
    const file = path.join(h.dataDir, 'logs', `${server.uuid}.log${suffix}`);
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  };
  /** The run before this one too: a confined start sets the last run's log aside as `.log.1` (docs/reference/power-and-console.md#servers-outlive-the-service). */
  const logsOfLastTwoRuns = (server: ServerRow) => log(server, '.1') + log(server);
  const events = async (server: ServerRow) =>
    (await h.db.db.selectFrom('activity_logs').selectAll().where('server_id', '=', server.id).orderBy('id').execute()).map(
      (r) => ({
        event: r.event,
        actor_id: r.actor_id,
        properties: JSON.parse(r.properties) as unknown,
      }),
    );

  async function running(harness: Harness, opts: { stopCommand?: string } = {}) {
    const made = await harness.make.ownedServer({ startup: ECHO_STARTUP, ...opts });
    expect((await power(made.owner.token, made.server, 'start')).statusCode).toBe(204);
    await eventually(() => log(made.server).includes('ready'));
    return made;
  }

  it('starts the startup command in the volume, reports it running, and logs the signal for the user', async () => {
    const { owner, server } = await running(h);
    expect(await state(owner.token, server)).toBe('running');
    expect(await events(server)).toEqual([{ event: 'server:power.start', actor_id: owner.user.id, properties: {} }]);
    const stats = (await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid}/resources` })).json();
    expect(stats).toMatchObject({ object: 'stats', attributes: { current_state: 'running', is_suspended: false } });
    const figures = stats.attributes.resources as Record<string, unknown>;
    expect(Object.keys(figures).sort()).toEqual([
      'cpu_absolute',
      'disk_bytes',
      'memory_bytes',
      'network_rx_bytes',
      'network_tx_bytes',
      'uptime',
    ]);
    for (const [name, value] of Object.entries(figures)) {
      expect(typeof value, name).toBe('number');
      expect(value, name).toBeGreaterThanOrEqual(0);
    }
    await power(owner.token, server, 'kill');
  });

  it('writes a console command to standard input and logs server:console.command', async () => {
    const { owner, server } = await running(h);
    expect((await command(owner.token, server, 'say hello')).statusCode).toBe(204);
    await eventually(() => log(server).includes('> say hello'));
    expect((await events(server)).at(-1)).toEqual({
      event: 'server:console.command',
      actor_id: owner.user.id,
      properties: { command: 'say hello' },
    });
    await power(owner.token, server, 'kill');
  });

  it('stops with the configured stop command and ends offline', async () => {
    const { owner, server } = await running(h, { stopCommand: 'stop' });
    expect((await power(owner.token, server, 'stop')).statusCode).toBe(204);
    await eventually(async () => (await state(owner.token, server)) === 'offline');
    expect(log(server)).toContain('stopping');
    expect((await events(server)).map((e) => e.event)).toEqual(['server:power.start', 'server:power.stop']);
  });

  it('stops with SIGTERM when no stop command is configured', async () => {
    const { owner, server } = await running(h);
    expect((await power(owner.token, server, 'stop')).statusCode).toBe(204);
    await eventually(async () => (await state(owner.token, server)) === 'offline');
    expect(log(server)).toContain('SIGTERM received');
  });

  it('restarts into a new process and kills at once', async () => {
    const { owner, server } = await running(h);
    expect((await power(owner.token, server, 'restart')).statusCode).toBe(204);
    await eventually(() => logsOfLastTwoRuns(server).split('ready').length - 1 === 2);
    await eventually(async () => (await state(owner.token, server)) === 'running');
    expect((await power(owner.token, server, 'kill')).statusCode).toBe(204);
    await eventually(async () => (await state(owner.token, server)) === 'offline');
    expect((await events(server)).map((e) => e.event)).toEqual([
      'server:power.start',
      'server:power.restart',
      'server:power.kill',
    ]);
  });

  it('reports offline once the process exits on its own', async () => {
    const { owner, server } = await running(h);
    expect((await command(owner.token, server, 'stop')).statusCode).toBe(204);
    await eventually(async () => (await state(owner.token, server)) === 'offline');
  });

  it('answers 502 to a console command for a server that is not running, and logs nothing', async () => {
    const { owner, server } = await h.make.ownedServer({ startup: ECHO_STARTUP });
    const res = await command(owner.token, server, 'say hi');
    expect(res.statusCode).toBe(502);
    expect(res.json().errors[0]).toMatchObject({ code: 'DaemonConnectionException', status: '502' });
    expect(await events(server)).toEqual([]);
  });

  it('answers 502 to start on a server without a startup command; its state is offline', async () => {
    const { owner, server } = await h.make.ownedServer();
    expect(await state(owner.token, server)).toBe('offline');
    const res = await power(owner.token, server, 'start');
    expect(res.statusCode).toBe(502);
    expect(res.json().errors[0].code).toBe('DaemonConnectionException');
  });

  it('validates the signal and the command', async () => {
    const { owner, server } = await h.make.ownedServer({ startup: ECHO_STARTUP });
    for (const signal of ['reboot', 1, null]) {
      const res = await power(owner.token, server, signal);
      expect(res.statusCode, String(signal)).toBe(422);
      expect(res.json().errors[0].meta.source_field).toBe('signal');
    }
    for (const line of ['a\nb', 'x'.repeat(4097), '', 5]) {
      const res = await command(owner.token, server, line);
      expect(res.statusCode).toBe(422);
      expect(res.json().errors[0].meta.source_field).toBe('command');
    }
  });

  it('checks the permission for each signal: kill needs control.stop', async () => {
    const { server } = await h.make.ownedServer({ startup: ECHO_STARTUP });
    const starter = await h.make.subuser(server, ['control.start']);
    const stopper = await h.make.subuser(server, ['control.stop']);
    expect((await power(starter.token, server, 'kill')).statusCode).toBe(403);
    expect((await power(starter.token, server, 'restart')).statusCode).toBe(403);
    expect((await power(stopper.token, server, 'start')).statusCode).toBe(403);
    expect((await power(stopper.token, server, 'kill')).statusCode).toBe(204);
    expect((await command(stopper.token, server, 'say hi')).statusCode).toBe(403);
    const res = await h.request(starter.token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}/resources` });
    expect(res.statusCode).toBe(200);
  });

  it('refuses power and console while a backup is being restored (409)', async () => {
    const { owner, server } = await h.make.ownedServer({ startup: ECHO_STARTUP, status: 'restoring_backup' });
    expect((await power(owner.token, server, 'start')).statusCode).toBe(409);
    expect((await command(owner.token, server, 'say hi')).statusCode).toBe(409);
    expect(await state(owner.token, server)).toBe('offline');
  });
});
