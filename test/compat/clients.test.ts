import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Client as JsPteroClient } from 'jspteroapi';
// jspteroapi defines task methods but does not attach them to Client; they are what its users call.
import jsPteroSchedules from 'jspteroapi/dist/client/methods/schedule.js';
import { PteroClient } from '@devnote-dev/pterojs';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

/**
 * The real npm clients, unchanged, against a running instance over real HTTP:
 * they must work against Quetzal exactly as they do against Pterodactyl.
 */
describeEachDatabase('existing clients', (database) => {
  const h = useHarness(database);
  let baseUrl = '';

  beforeAll(async () => {
    baseUrl = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await h.app.close();
  });

  async function completedBackup(token: string, serverRef: string) {
    const res = await fetch(`${baseUrl}/api/client/servers/${serverRef}/backups`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(200);
    const backup = (await res.json()) as { attributes: { uuid: string } };
    await h.jobs.idle();
    return backup.attributes.uuid;
  }

  it('jspteroapi: schedule create/update, task create/update, restore', async () => {
    const { owner, server } = await h.make.ownedServer();
    const client = new JsPteroClient(baseUrl, owner.token, undefined, true);
    const tasks = new jsPteroSchedules.scheduleMethods(client);
    expect(await client.testAPI()).toBe(true);

    const created = await client.createSchedule(server.uuid_short, 'jsptero', '*/5', '*', '*', '*', '*', true, false);
    expect(created).toMatchObject({ name: 'jsptero', cron: { minute: '*/5' }, is_active: true, only_when_online: false });

    const edited = await client.editSchedule(server.uuid_short, created.id, { name: 'jsptero 2', hour: '3' });
    expect(edited).toMatchObject({ name: 'jsptero 2', cron: { minute: '*/5', hour: '3' } });

    const task = await tasks.createTask(server.uuid_short, created.id, 'command', 'say hello', 30, true);
    expect(task).toMatchObject({
      action: 'command',
      payload: 'say hello',
      time_offset: 30,
      continue_on_failure: true,
      sequence_id: 1,
    });

    const editedTask = await tasks.editTask(server.uuid_short, created.id, task.id, { payload: 'say bye', timeOffset: 60 });
    expect(editedTask).toMatchObject({ action: 'command', payload: 'say bye', time_offset: 60 });

    const info = await client.getScheduleInfo(server.uuid_short, created.id);
    expect(info.relationships.tasks.data.map((t: { attributes: { payload: string } }) => t.attributes.payload)).toEqual([
      'say bye',
    ]);

    const volume = h.daemon.volumeDir(server.uuid);
    fs.writeFileSync(path.join(volume, 'world.dat'), 'original');
    const backupUuid = await completedBackup(owner.token, server.uuid_short);
    fs.writeFileSync(path.join(volume, 'world.dat'), 'changed');
    fs.writeFileSync(path.join(volume, 'extra.txt'), 'extra');
    await client.restoreBackup(server.uuid_short, backupUuid, true);
    await h.jobs.idle();
    expect(fs.readFileSync(path.join(volume, 'world.dat'), 'utf8')).toBe('original');
    expect(fs.existsSync(path.join(volume, 'extra.txt'))).toBe(false);
  });

  it('pterojs: schedule create/update, task create/update, restore', async () => {
    const { owner, server } = await h.make.ownedServer();
    const client = new PteroClient(baseUrl, owner.token, {
      fetchClient: false,
      servers: { fetch: false, cache: false },
    } as never);

    const schedule = await client.schedules.create(server.uuid_short, {
      name: 'pterojs',
      minute: '0',
      hour: '4',
      dayOfMonth: '*',
      month: '*',
      dayOfWeek: '*',
      active: true,
    } as never);
    expect(schedule.name).toBe('pterojs');
    expect(schedule.cron).toMatchObject({ minute: '0', hour: '4' });
    expect(schedule.nextRunAt.getTime()).toBeGreaterThan(Date.now() - 1000);

    const updated = await client.schedules.update(server.uuid_short, schedule.id, { name: 'pterojs 2', minute: '15' } as never);
    expect(updated.name).toBe('pterojs 2');
    expect(updated.cron).toMatchObject({ minute: '15', hour: '4' });

    const task = await schedule.createTask('power' as never, 'restart', 10);
    expect(task).toMatchObject({ action: 'power', payload: 'restart', offset: 10, sequenceId: 1 });
    const updatedTask = await schedule.updateTask(task.id, { payload: 'start', offset: 20 } as never);
    expect(updatedTask).toMatchObject({ action: 'power', payload: 'start', offset: 20 });

    const fetched = await client.schedules.fetch(server.uuid_short, schedule.id, { force: true });
    expect([...fetched.tasks.values()].map((t) => t.payload)).toEqual(['start']);

    const volume = h.daemon.volumeDir(server.uuid);
    fs.writeFileSync(path.join(volume, 'config.yml'), 'a: 1');
    const backupUuid = await completedBackup(owner.token, server.uuid_short);
    fs.writeFileSync(path.join(volume, 'config.yml'), 'a: 2');
    fs.writeFileSync(path.join(volume, 'kept.txt'), 'kept');
    const remote = await client.servers.fetch(server.uuid_short);
    await remote.backups.restore(backupUuid);
    await h.jobs.idle();
    expect(fs.readFileSync(path.join(volume, 'config.yml'), 'utf8')).toBe('a: 1');
    // pterojs sends no body: truncate defaults to false and other files stay.
    expect(fs.readFileSync(path.join(volume, 'kept.txt'), 'utf8')).toBe('kept');
  });

  /** An owner's server holding two allocations (the first its primary) with one more free on its IP, users allowed up to 3. */
  async function serverWithAllocations(ip: string) {
    const { owner, server } = await h.make.ownedServer();
    const now = h.clock.now();
    const rows = await h.db.db
      .insertInto('allocations')
      .values(
        [25565, 25566, 25567].map((port) => ({
          ip,
          port,
          ip_alias: null,
          server_id: null,
          notes: null,
          created_at: now,
          updated_at: now,
        })),
      )
      .returningAll()
      .execute();
    rows.sort((a, b) => a.port - b.port);
    await h.db.db
      .updateTable('allocations')
      .set({ server_id: server.id })
      .where('id', 'in', [rows[0]!.id, rows[1]!.id])
      .execute();
    await h.db.db
      .updateTable('servers')
      .set({ allocation_id: rows[0]!.id, allocation_limit: 3 })
      .where('id', '=', server.id)
      .execute();
    return { owner, server, rows };
  }

  it('jspteroapi: network allocations (list, assign, notes, primary, delete)', async () => {
    const { owner, server, rows } = await serverWithAllocations('10.9.0.1');
    const client = new JsPteroClient(baseUrl, owner.token, undefined, true);
    // jspteroapi types the list as bare attributes; what it returns is Pterodactyl's `data`, items with `attributes`.
    type Items = { attributes: { port: number; is_default: boolean } }[];
    const listed = (await client.getAllAlocations(server.uuid_short)) as unknown as Items;
    expect(listed.map((a) => [a.attributes.port, a.attributes.is_default])).toEqual([
      [25565, true],
      [25566, false],
    ]);
    const assigned = await client.assignAllocation(server.uuid_short);
    expect(assigned).toMatchObject({ id: rows[2]!.id, ip: '10.9.0.1', port: 25567, is_default: false, notes: null });
    expect(await client.setAllocationNote(server.uuid_short, rows[1]!.id, 'rcon')).toMatchObject({ port: 25566, notes: 'rcon' });
    expect(await client.setAllocationPrimary(server.uuid_short, rows[1]!.id)).toMatchObject({ port: 25566, is_default: true });
    expect(await client.deleteAllocation(server.uuid_short, rows[0]!.id)).toBe('Sucessfully deleted Allocation!');
    const after = (await client.getAllAlocations(server.uuid_short)) as unknown as Items;
    expect(after.map((a) => a.attributes.port)).toEqual([25566, 25567]);
    const info = await client.getServerInfo(server.uuid_short);
    expect(info.feature_limits.allocations).toBe(3);
    expect(info.relationships.allocations.data.map((a) => a.attributes.port)).toEqual([25566, 25567]);
  });

  it('pterojs: network allocations (fetch, notes, primary, unassign)', async () => {
    const { owner, server, rows } = await serverWithAllocations('10.9.0.2');
    const client = new PteroClient(baseUrl, owner.token, {
      fetchClient: false,
      servers: { fetch: false, cache: false },
    } as never);
    const remote = await client.servers.fetch(server.uuid_short);
    expect(remote.featureLimits).toMatchObject({ allocations: 3 });
    const fetched = await remote.network.fetch();
    expect([...fetched.values()].map((a) => [a.port, a.isDefault, a.notes])).toEqual([
      [25565, true, null],
      [25566, false, null],
    ]);
    await remote.network.setNote(rows[1]!.id, 'query');
    await remote.network.setPrimary(rows[1]!.id);
    await remote.network.unassign(rows[0]!.id);
    const after = await remote.network.fetch();
    expect([...after.values()].map((a) => [a.port, a.isDefault, a.notes])).toEqual([[25566, true, 'query']]);
  });
});
