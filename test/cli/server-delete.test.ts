import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CliContext, CliOptions } from '../../src/cli/command.js';
import { command as serverDelete } from '../../src/cli/commands/server-delete.js';
import { daemonServer } from '../../src/modules/servers/servers.service.js';
import { ECHO_STARTUP } from '../helpers/containment.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { makeEgg, useEgg } from '../startup/egg-fixture.js';
import { quetzal, quetzalJson, useSandbox } from './helpers.js';

/**
 * `server:delete --server S [--force]` (docs/reference/cli.md, docs/reference/eggs-and-installs.md): the row and
 * every row that hangs off it in one transaction, allocations freed, then the
 * backups' archives, the volume and the logs; refused while the server runs
 * unless --force; a deletion cut short is finished by running it again.
 */
describeEachDatabase('server:delete', (database) => {
  const h = useHarness(database);
  const ctx = (): CliContext => ({ config: h.config, database: h.db, daemon: h.daemon, clock: h.clock });
  const run = (options: CliOptions) => serverDelete.run(ctx(), options);
  const volume = (uuid: string) => path.join(h.dataDir, 'volumes', uuid);
  const count = async (table: 'subusers' | 'schedules' | 'backups' | 'activity_logs' | 'server_variables', serverId: number) =>
    Number(
      (
        await h.db.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('server_id', '=', serverId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('removes the row, its dependent rows, its backups, volume and logs, and frees its allocations', async () => {
    const { owner, server: plain } = await h.make.ownedServer();
    const { egg, variables } = await makeEgg(h);
    const server = await useEgg(h, plain, egg, null);
    await h.make.subuser(server, ['startup.read']);
    const base = `/api/client/servers/${server.uuid_short}`;
    const schedule = await h.request(owner.token, {
      method: 'POST',
      url: `${base}/schedules`,
      payload: { name: 'nightly', minute: '0', hour: '3', day_of_month: '*', month: '*', day_of_week: '*' },
    });
    expect(schedule.statusCode).toBe(200);
    expect(
      (
        await h.request(owner.token, {
          method: 'PUT',
          url: `${base}/startup/variable`,
          payload: { key: 'LEVEL_SEED', value: '42' },
        })
      ).statusCode,
    ).toBe(200);
    fs.writeFileSync(path.join(volume(server.uuid), 'world.dat'), 'data');
    const backup = await h.request(owner.token, { method: 'POST', url: `${base}/backups`, payload: { name: 'b' } });
    expect(backup.statusCode).toBe(200);
    await h.jobs.idle();
    const archive = path.join(h.dataDir, 'backups', `${backup.json().attributes.uuid}.tar.gz`);
    expect(fs.existsSync(archive)).toBe(true);
    const logFile = path.join(h.dataDir, 'logs', `${server.uuid}.log`);
    fs.writeFileSync(logFile, 'old console output\n');
    const now = h.clock.now();
    const ip = `10.99.${server.id % 250}.${(server.id * 3) % 250}`;
    const allocation = await h.db.db
      .insertInto('allocations')
      .values({ ip, port: 25565, ip_alias: null, server_id: server.id, notes: 'main', created_at: now, updated_at: now })
      .returningAll()
      .executeTakeFirstOrThrow();
    await h.db.db.updateTable('servers').set({ allocation_id: allocation.id }).where('id', '=', server.id).execute();
    expect(await count('activity_logs', server.id)).toBeGreaterThan(0);

    expect(await run({ server: server.uuid_short })).toEqual({ deleted: true });

    expect(await h.db.db.selectFrom('servers').selectAll().where('id', '=', server.id).executeTakeFirst()).toBeUndefined();
    for (const table of ['subusers', 'schedules', 'backups', 'activity_logs', 'server_variables'] as const) {
      expect(await count(table, server.id), table).toBe(0);
    }
    const tasks = await h.db.db
      .selectFrom('tasks')
      .selectAll()
      .where('schedule_id', '=', schedule.json().attributes.id)
      .execute();
    expect(tasks).toEqual([]);
    expect(
      await h.db.db.selectFrom('allocations').selectAll().where('id', '=', allocation.id).executeTakeFirstOrThrow(),
    ).toMatchObject({
      server_id: null,
      notes: null,
    });
    // The egg and its variables are the node's, not the server's.
    expect(
      await h.db.db.selectFrom('egg_variables').select('id').where('id', '=', variables[0]!.id).executeTakeFirst(),
    ).toBeDefined();
    expect(fs.existsSync(volume(server.uuid))).toBe(false);
    expect(fs.existsSync(archive)).toBe(false);
    expect(fs.existsSync(logFile)).toBe(false);
    // Its API is gone with it.
    expect((await h.request(owner.token, { method: 'GET', url: base })).statusCode).toBe(404);
  });

  it('refuses a running server (nothing removed) unless --force, which kills it first', async () => {
    const { server } = await h.make.ownedServer({ startup: ECHO_STARTUP });
    const target = daemonServer(server);
    await h.daemon.power(target, 'start');
    expect(await h.daemon.state(target)).not.toBe('offline');
    await expect(run({ server: server.uuid })).rejects.toThrow(/running; stop it first/);
    expect(await h.db.db.selectFrom('servers').select('id').where('id', '=', server.id).executeTakeFirst()).toBeDefined();
    expect(fs.existsSync(volume(server.uuid))).toBe(true);
    expect(await run({ server: server.uuid, force: true })).toEqual({ deleted: true });
    expect(await h.daemon.state(target)).toBe('offline');
    expect(fs.existsSync(volume(server.uuid))).toBe(false);
  });

  it('refuses while a backup is restored into it, even with --force', async () => {
    const { server } = await h.make.ownedServer({ status: 'restoring_backup' });
    await expect(run({ server: server.uuid, force: true })).rejects.toThrow(/restored/);
    expect(fs.existsSync(volume(server.uuid))).toBe(true);
  });

  it('finishes a deletion cut short after its commit: the row gone, the volume left, then swept by the next start', async () => {
    const { server } = await h.make.ownedServer();
    fs.writeFileSync(path.join(volume(server.uuid), 'left.txt'), 'x');
    // What a SIGKILL right after the commit leaves: no row, the files all there.
    await h.db.db.deleteFrom('servers').where('id', '=', server.id).execute();
    await expect(run({ server: server.uuid_short })).rejects.toThrow(/No server matches/);
    expect(await run({ server: server.uuid })).toEqual({ deleted: true });
    expect(fs.existsSync(volume(server.uuid))).toBe(false);
    await expect(run({ server: server.uuid })).rejects.toThrow(/No server matches/);
    // Killed after the rename: a `.removing-` folder, which the daemon's start removes.
    const removing = path.join(h.dataDir, 'volumes', `.removing-${server.uuid}`);
    fs.mkdirSync(path.join(removing, 'deep'), { recursive: true });
    await h.daemon.start();
    expect(fs.existsSync(removing)).toBe(false);
  });
});

describe('server:delete on the command line', () => {
  const box = useSandbox('sqlite');

  it('prints {"deleted": true}; an unknown server exits 1', async () => {
    await quetzalJson(['user:create', '--username', 'alice', '--email', 'alice@example.com'], box.env);
    const created = await quetzalJson(['server:create', '--owner', 'alice', '--name', 'gone'], box.env);
    expect(await quetzalJson(['server:delete', '--server', created.identifier], box.env)).toEqual({ deleted: true });
    const again = await quetzal(['server:delete', '--server', created.identifier, '--json'], box.env);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
  }, 120_000);
});
