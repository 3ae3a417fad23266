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
    expect(task).toMatchObject({ action: 'command', payload: 'say hello', time_offset: 30, continue_on_failure: true, sequence_id: 1 });

    const editedTask = await tasks.editTask(server.uuid_short, created.id, task.id, { payload: 'say bye', timeOffset: 60 });
    expect(editedTask).toMatchObject({ action: 'command', payload: 'say bye', time_offset: 60 });

    const info = await client.getScheduleInfo(server.uuid_short, created.id);
    expect(info.relationships.tasks.data.map((t: { attributes: { payload: string } }) => t.attributes.payload)).toEqual(['say bye']);

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
    const client = new PteroClient(baseUrl, owner.token, { fetchClient: false, servers: { fetch: false, cache: false } } as never);

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
});
