import { expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

describeEachDatabase('tasks', (database) => {
  const h = useHarness(database);

  async function scheduleOf(token: string, server: ServerRow, name = 'sched') {
    const res = await h.request(token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid}/schedules`,
      payload: { name },
    });
    expect(res.statusCode).toBe(200);
    return res.json().attributes.id as number;
  }
  const tasksUrl = (server: ServerRow, schedule: number) =>
    `/api/client/servers/${server.uuid_short}/schedules/${schedule}/tasks`;
  async function sequence(schedule: number) {
    const rows = await h.db.db
      .selectFrom('tasks')
      .select(['id', 'sequence_id', 'payload'])
      .where('schedule_id', '=', schedule)
      .orderBy('sequence_id')
      .execute();
    return rows.map((r) => r.payload);
  }
  async function taskEvents(serverId: number) {
    const rows = await h.db.db
      .selectFrom('activity_logs')
      .selectAll()
      .where('server_id', '=', serverId)
      .where('event', 'like', 'server:task.%')
      .orderBy('id')
      .execute();
    return rows.map((r) => ({ event: r.event, properties: JSON.parse(r.properties) }));
  }

  it('creates a task with the task object and logs it', async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await scheduleOf(owner.token, server, 'Restart');
    const res = await h.request(owner.token, {
      method: 'POST',
      url: tasksUrl(server, schedule),
      payload: { action: 'command', payload: 'say hi', time_offset: 0 },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      object: 'task',
      attributes: {
        sequence_id: 1,
        action: 'command',
        payload: 'say hi',
        time_offset: 0,
        is_queued: false,
        continue_on_failure: false,
      },
    });
    expect(await taskEvents(server.id)).toEqual([
      { event: 'server:task.create', properties: { name: 'Restart', action: 'command', payload: 'say hi' } },
    ]);
    const shown = await h.request(owner.token, {
      method: 'GET',
      url: `/api/client/servers/${server.uuid}/schedules/${schedule}`,
    });
    expect(shown.json().attributes.relationships.tasks.data).toHaveLength(1);
  });

  it('validates action, payload and time_offset', async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await scheduleOf(owner.token, server);
    const cases: [object, string, string][] = [
      [{ payload: 'x', time_offset: 0 }, 'action', 'required'],
      [{ action: 'command', payload: 'x' }, 'time_offset', 'required'],
      [{ action: 'shell', payload: 'x', time_offset: 0 }, 'action', 'in'],
      [{ action: 'command', time_offset: 0 }, 'payload', 'required'],
      [{ action: 'command', payload: '   ', time_offset: 0 }, 'payload', 'required'],
      [{ action: 'command', payload: 'a\nb', time_offset: 0 }, 'payload', 'regex'],
      [{ action: 'command', payload: 'é'.repeat(2049), time_offset: 0 }, 'payload', 'max'],
      [{ action: 'power', payload: 'say hi', time_offset: 0 }, 'payload', 'in'],
      [{ action: 'delete_files', payload: '/etc/passwd', time_offset: 0 }, 'payload', 'regex'],
      [{ action: 'delete_files', payload: 'logs/../../x', time_offset: 0 }, 'payload', 'regex'],
      [{ action: 'command', payload: 'x', time_offset: 901 }, 'time_offset', 'max'],
      [{ action: 'command', payload: 'x', time_offset: -1 }, 'time_offset', 'min'],
      [{ action: 'command', payload: 'x', time_offset: 1.5 }, 'time_offset', 'integer'],
      [{ action: 'command', payload: 'x', time_offset: 0, continue_on_failure: 'nope' }, 'continue_on_failure', 'boolean'],
      [{ action: 'command', payload: 'x', time_offset: 0, sequence_id: 0 }, 'sequence_id', 'min'],
    ];
    for (const [payload, field, rule] of cases) {
      const res = await h.request(owner.token, { method: 'POST', url: tasksUrl(server, schedule), payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(
        res.json().errors.map((e: { meta: object }) => e.meta),
        JSON.stringify(payload),
      ).toContainEqual({ source_field: field, rule });
    }
    // 4096 bytes exactly is allowed; digit strings count as seconds.
    const ok = await h.request(owner.token, {
      method: 'POST',
      url: tasksUrl(server, schedule),
      payload: { action: 'command', payload: 'é'.repeat(2048), time_offset: '900' },
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().attributes.time_offset).toBe(900);
    const backup = await h.request(owner.token, {
      method: 'POST',
      url: tasksUrl(server, schedule),
      payload: { action: 'backup', time_offset: 0 },
    });
    expect(backup.json().attributes.payload).toBe('');
    expect(await taskEvents(server.id)).toHaveLength(2);
  });

  it('keeps sequence ids 1..n when inserting at a position, moving and deleting', async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await scheduleOf(owner.token, server);
    const ids: Record<string, number> = {};
    for (const name of ['a', 'b', 'c']) {
      const res = await h.request(owner.token, {
        method: 'POST',
        url: tasksUrl(server, schedule),
        payload: { action: 'command', payload: name, time_offset: 0 },
      });
      ids[name] = res.json().attributes.id;
    }
    const first = await h.request(owner.token, {
      method: 'POST',
      url: tasksUrl(server, schedule),
      payload: { action: 'command', payload: 'first', time_offset: 0, sequence_id: 1 },
    });
    expect(first.json().attributes.sequence_id).toBe(1);
    expect(await sequence(schedule)).toEqual(['first', 'a', 'b', 'c']);
    const far = await h.request(owner.token, {
      method: 'POST',
      url: tasksUrl(server, schedule),
      payload: { action: 'command', payload: 'last', time_offset: 0, sequence_id: 99 },
    });
    expect(far.json().attributes.sequence_id).toBe(5);

    const moved = await h.request(owner.token, {
      method: 'PUT',
      url: `${tasksUrl(server, schedule)}/${ids.c}`,
      payload: { sequence_id: 2 },
    });
    expect(moved.json().attributes).toMatchObject({ sequence_id: 2, payload: 'c', action: 'command' });
    expect(await sequence(schedule)).toEqual(['first', 'c', 'a', 'b', 'last']);
    await h.request(owner.token, { method: 'PATCH', url: `${tasksUrl(server, schedule)}/${ids.c}`, payload: { sequence_id: 4 } });
    expect(await sequence(schedule)).toEqual(['first', 'a', 'b', 'c', 'last']);

    const deleted = await h.request(owner.token, { method: 'DELETE', url: `${tasksUrl(server, schedule)}/${ids.a}` });
    expect(deleted.statusCode).toBe(204);
    expect(await sequence(schedule)).toEqual(['first', 'b', 'c', 'last']);
    const seqs = await h.db.db
      .selectFrom('tasks')
      .select('sequence_id')
      .where('schedule_id', '=', schedule)
      .orderBy('sequence_id')
      .execute();
    expect(seqs.map((s) => s.sequence_id)).toEqual([1, 2, 3, 4]);
    const events = await taskEvents(server.id);
    expect(events.at(-1)).toEqual({ event: 'server:task.delete', properties: { name: 'sched' } });
  });

  it('updates partially; changing action re-validates the old payload', async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await scheduleOf(owner.token, server);
    const created = await h.request(owner.token, {
      method: 'POST',
      url: tasksUrl(server, schedule),
      payload: { action: 'command', payload: 'say hi', time_offset: 10 },
    });
    const url = `${tasksUrl(server, schedule)}/${created.json().attributes.id}`;
    const toPower = await h.request(owner.token, { method: 'PUT', url, payload: { action: 'power' } });
    expect(toPower.statusCode).toBe(422);
    expect(toPower.json().errors[0].meta).toEqual({ source_field: 'payload', rule: 'in' });

    const offset = await h.request(owner.token, { method: 'POST', url, payload: { time_offset: 30, continue_on_failure: true } });
    expect(offset.json().attributes).toMatchObject({
      action: 'command',
      payload: 'say hi',
      time_offset: 30,
      continue_on_failure: true,
    });
    const toBackup = await h.request(owner.token, { method: 'PUT', url, payload: { action: 'backup' } });
    expect(toBackup.json().attributes).toMatchObject({ action: 'backup', payload: '' });
    const toCommand = await h.request(owner.token, { method: 'PUT', url, payload: { action: 'command' } });
    expect(toCommand.statusCode).toBe(422);
    const ok = await h.request(owner.token, { method: 'PUT', url, payload: { action: 'power', payload: 'restart' } });
    expect(ok.json().attributes).toMatchObject({ action: 'power', payload: 'restart', time_offset: 30 });
    expect((await taskEvents(server.id)).map((e) => e.event)).toEqual([
      'server:task.create',
      'server:task.update',
      'server:task.update',
      'server:task.update',
    ]);
  });

  it('refuses an 11th task with ServiceLimitExceededException', async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await scheduleOf(owner.token, server);
    for (let i = 0; i < 10; i++) {
      const res = await h.request(owner.token, {
        method: 'POST',
        url: tasksUrl(server, schedule),
        payload: { action: 'command', payload: `c${i}`, time_offset: 0 },
      });
      expect(res.statusCode).toBe(200);
    }
    const res = await h.request(owner.token, {
      method: 'POST',
      url: tasksUrl(server, schedule),
      payload: { action: 'command', payload: 'c11', time_offset: 0 },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0]).toMatchObject({ code: 'ServiceLimitExceededException', status: '400' });
    expect(await sequence(schedule)).toHaveLength(10);
  });

  it('two concurrent creates never pass the limit', async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await scheduleOf(owner.token, server);
    for (let i = 0; i < 9; i++) {
      await h.request(owner.token, {
        method: 'POST',
        url: tasksUrl(server, schedule),
        payload: { action: 'command', payload: `c${i}`, time_offset: 0 },
      });
    }
    const results = await Promise.all(
      [1, 2, 3].map((i) =>
        h.request(owner.token, {
          method: 'POST',
          url: tasksUrl(server, schedule),
          payload: { action: 'command', payload: `x${i}`, time_offset: 0 },
        }),
      ),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 400, 400]);
    expect(await sequence(schedule)).toHaveLength(10);
  });

  it('a backup task on a server whose backup limit is 0 is a 403, on create and on update', async () => {
    const { owner, server } = await h.make.ownedServer({ backupLimit: 0 });
    const schedule = await scheduleOf(owner.token, server);
    const res = await h.request(owner.token, {
      method: 'POST',
      url: tasksUrl(server, schedule),
      payload: { action: 'backup', time_offset: 0 },
    });
    expect(res.statusCode).toBe(403);
    const created = await h.request(owner.token, {
      method: 'POST',
      url: tasksUrl(server, schedule),
      payload: { action: 'command', payload: 'x', time_offset: 0 },
    });
    const update = await h.request(owner.token, {
      method: 'PUT',
      url: `${tasksUrl(server, schedule)}/${created.json().attributes.id}`,
      payload: { action: 'backup' },
    });
    expect(update.statusCode).toBe(403);
  });

  it("checks the action's own permission for subusers, after the body", async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await scheduleOf(owner.token, server);
    const sub = await h.make.subuser(server, ['schedule.update', 'control.start']);
    const post = (payload: object) => h.request(sub.token, { method: 'POST', url: tasksUrl(server, schedule), payload });
    expect((await post({ action: 'command', payload: 'op me', time_offset: 0 })).statusCode).toBe(403);
    expect((await post({ action: 'power', payload: 'stop', time_offset: 0 })).statusCode).toBe(403);
    expect((await post({ action: 'power', payload: 'kill', time_offset: 0 })).statusCode).toBe(403);
    expect((await post({ action: 'backup', time_offset: 0 })).statusCode).toBe(403);
    expect((await post({ action: 'delete_files', payload: 'x', time_offset: 0 })).statusCode).toBe(403);
    expect((await post({ action: 'command', time_offset: 0 })).statusCode).toBe(422);
    const start = await post({ action: 'power', payload: 'start', time_offset: 0 });
    expect(start.statusCode).toBe(200);
    // Updating the payload alone to a signal they may not send is refused too.
    const url = `${tasksUrl(server, schedule)}/${start.json().attributes.id}`;
    expect((await h.request(sub.token, { method: 'PUT', url, payload: { payload: 'restart' } })).statusCode).toBe(403);
    expect((await h.request(sub.token, { method: 'PUT', url, payload: { action: 'command', payload: 'say' } })).statusCode).toBe(
      403,
    );
    expect((await h.request(sub.token, { method: 'PUT', url, payload: { time_offset: 5 } })).statusCode).toBe(200);

    const noUpdate = await h.make.subuser(server, ['schedule.read', 'control.console']);
    const res = await h.request(noUpdate.token, {
      method: 'POST',
      url: tasksUrl(server, schedule),
      payload: { action: 'nonsense' },
    });
    expect(res.statusCode).toBe(403);
  });

  it('task ids of another schedule or server are 404', async () => {
    const { owner, server } = await h.make.ownedServer();
    const a = await scheduleOf(owner.token, server, 'a');
    const b = await scheduleOf(owner.token, server, 'b');
    const other = await h.make.server(owner.user);
    const otherSchedule = await scheduleOf(owner.token, other, 'c');
    const created = await h.request(owner.token, {
      method: 'POST',
      url: tasksUrl(server, a),
      payload: { action: 'command', payload: 'x', time_offset: 0 },
    });
    const id = created.json().attributes.id;
    expect((await h.request(owner.token, { method: 'PUT', url: `${tasksUrl(server, b)}/${id}`, payload: {} })).statusCode).toBe(
      404,
    );
    expect((await h.request(owner.token, { method: 'DELETE', url: `${tasksUrl(other, otherSchedule)}/${id}` })).statusCode).toBe(
      404,
    );
    expect((await h.request(owner.token, { method: 'PUT', url: `${tasksUrl(other, a)}/${id}`, payload: {} })).statusCode).toBe(
      404,
    );
    expect((await h.request(owner.token, { method: 'PUT', url: `${tasksUrl(server, a)}/abc`, payload: {} })).statusCode).toBe(
      404,
    );
  });
});
