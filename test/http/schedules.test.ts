import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;

describeEachDatabase('schedules', (database) => {
  const h = useHarness(database);

  async function events(serverId: number) {
    const rows = await h.db.db.selectFrom('activity_logs').selectAll().where('server_id', '=', serverId).orderBy('id').execute();
    return rows.map((r) => ({
      event: r.event,
      properties: JSON.parse(r.properties),
      actor_id: r.actor_id,
      api_key_id: r.api_key_id,
      ip: r.ip,
    }));
  }

  it('creates a schedule with defaults, computes next_run_at and logs the event', async () => {
    const { owner, server } = await h.make.ownedServer();
    h.clock.set(Date.parse('2026-11-22T10:04:30Z'));
    const res = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid_short}/schedules`,
      payload: { name: '  Nightly restart  ', minute: '5', hour: '10' },
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.object).toBe('server_schedule');
    expect(body.attributes).toMatchObject({
      name: 'Nightly restart',
      cron: { minute: '5', hour: '10', day_of_month: '*', month: '*', day_of_week: '*' },
      is_active: true,
      is_processing: false,
      only_when_online: false,
      last_run_at: null,
      next_run_at: '2026-11-22T10:05:00+00:00',
      relationships: { tasks: { object: 'list', data: [] } },
    });
    expect(body.attributes.created_at).toMatch(ISO);
    expect(body.attributes.updated_at).toMatch(ISO);
    expect(typeof body.attributes.id).toBe('number');
    expect(await events(server.id)).toEqual([
      {
        event: 'server:schedule.create',
        properties: { name: 'Nightly restart' },
        actor_id: owner.user.id,
        api_key_id: expect.any(Number),
        ip: '127.0.0.1',
      },
    ]);
  });

  it('accepts loose booleans and rejects other values', async () => {
    const { owner, server } = await h.make.ownedServer();
    for (const [value, expected] of [
      [false, false],
      [0, false],
      ['0', false],
      ['false', false],
      [true, true],
      [1, true],
      ['1', true],
      ['true', true],
    ] as const) {
      const res = await h.request(owner.token, {
        method: 'POST',
        url: `/api/client/servers/${server.uuid}/schedules`,
        payload: { name: 'x', is_active: value, only_when_online: value },
      });
      expect(res.statusCode).toBe(200);
      expect(res.json().attributes.is_active).toBe(expected);
      expect(res.json().attributes.only_when_online).toBe(expected);
    }
    const bad = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid}/schedules`,
      payload: { name: 'x', is_active: 'yes' },
    });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().errors[0]).toMatchObject({
      code: 'ValidationException',
      status: '422',
      meta: { source_field: 'is_active', rule: 'boolean' },
    });
  });

  it('validates the name and each cron field, naming the offending field', async () => {
    const { owner, server } = await h.make.ownedServer();
    const post = (payload: object) =>
      h.request(owner.token, { method: 'POST', url: `/api/client/servers/${server.uuid}/schedules`, payload });
    const cases: [object, string, string][] = [
      [{}, 'name', 'required'],
      [{ name: '   ' }, 'name', 'required'],
      [{ name: null }, 'name', 'required'],
      [{ name: 'x'.repeat(192) }, 'name', 'max'],
      [{ name: 5 }, 'name', 'string'],
      [{ name: 'a', minute: '60' }, 'minute', 'cron'],
      [{ name: 'a', hour: '24' }, 'hour', 'cron'],
      [{ name: 'a', day_of_month: '0' }, 'day_of_month', 'cron'],
      [{ name: 'a', month: '13' }, 'month', 'cron'],
      [{ name: 'a', day_of_week: '8' }, 'day_of_week', 'cron'],
      [{ name: 'a', minute: '*/0' }, 'minute', 'cron'],
      [{ name: 'a', minute: 5 }, 'minute', 'string'],
      [{ name: 'a', minute: '0', hour: '0', day_of_month: '30', month: '2' }, 'cron', 'cron'],
      [{ name: 'a\u0000b' }, 'name', 'regex'],
    ];
    for (const [payload, field, rule] of cases) {
      const res = await post(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(
        res.json().errors.map((e: { meta: object }) => e.meta),
        JSON.stringify(payload),
      ).toContainEqual({ source_field: field, rule });
    }
    // 191 code points is fine even when they are astral characters (length counted in code points).
    expect((await post({ name: '😀'.repeat(191) })).statusCode).toBe(200);
    expect(await events(server.id)).toHaveLength(1);
  });

  it('accepts the full cron syntax', async () => {
    const { owner, server } = await h.make.ownedServer();
    const res = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid}/schedules`,
      payload: {
        name: 'syntax',
        minute: '*/15',
        hour: '1-5/2,8',
        day_of_month: '1,15',
        month: 'JAN-MAR',
        day_of_week: 'mon-fri',
      },
    });
    expect(res.statusCode).toBe(200);
  });

  it('updates partially with PUT, POST and PATCH; {} changes nothing but updated_at and still logs', async () => {
    const { owner, server } = await h.make.ownedServer();
    h.clock.set(Date.parse('2026-11-22T10:00:00Z'));
    const created = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid}/schedules`,
      payload: { name: 'orig', minute: '30', only_when_online: true },
    });
    const id = created.json().attributes.id;
    const url = `/api/client/servers/${server.uuid}/schedules/${id}`;
    h.clock.advance(5_000);
    const empty = await h.request(owner.token, { method: 'PUT', url, payload: {} });
    expect(empty.statusCode).toBe(200);
    const { updated_at: updatedAt, ...rest } = empty.json().attributes;
    const { updated_at: createdUpdatedAt, ...restBefore } = created.json().attributes;
    expect(rest).toEqual(restBefore);
    expect(updatedAt).not.toBe(createdUpdatedAt);

    const renamed = await h.request(owner.token, { method: 'POST', url, payload: { name: 'renamed' } });
    expect(renamed.json().attributes).toMatchObject({ name: 'renamed', cron: { minute: '30' }, only_when_online: true });
    const patched = await h.request(owner.token, { method: 'PATCH', url, payload: { hour: '3' } });
    expect(patched.json().attributes).toMatchObject({
      name: 'renamed',
      cron: { minute: '30', hour: '3' },
      next_run_at: '2026-11-23T03:30:00+00:00',
    });

    const logged = (await events(server.id)).filter((e) => e.event === 'server:schedule.update');
    expect(logged.map((e) => e.properties)).toEqual([
      { name: 'orig', active: true },
      { name: 'renamed', active: true },
      { name: 'renamed', active: true },
    ]);
  });

  it('resets is_processing when is_active changes and recomputes next_run_at from now when re-enabled', async () => {
    const { owner, server } = await h.make.ownedServer();
    h.clock.set(Date.parse('2026-01-01T00:00:00Z'));
    const created = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid}/schedules`,
      payload: { name: 'stuck', minute: '0', hour: '12' },
    });
    const id = created.json().attributes.id;
    await h.db.db.updateTable('schedules').set({ is_processing: 1 }).where('id', '=', id).execute();
    const url = `/api/client/servers/${server.uuid}/schedules/${id}`;
    const off = await h.request(owner.token, { method: 'PUT', url, payload: { is_active: false } });
    expect(off.json().attributes).toMatchObject({ is_active: false, is_processing: false });

    h.clock.set(Date.parse('2026-06-10T13:00:00Z'));
    const on = await h.request(owner.token, { method: 'PUT', url, payload: { is_active: true } });
    expect(on.json().attributes).toMatchObject({ is_active: true, next_run_at: '2026-06-11T12:00:00+00:00' });
    const logged = (await events(server.id)).filter((e) => e.event === 'server:schedule.update').map((e) => e.properties);
    expect(logged).toEqual([
      { name: 'stuck', active: false },
      { name: 'stuck', active: true },
    ]);
  });

  it('a rejected update changes nothing and logs nothing', async () => {
    const { owner, server } = await h.make.ownedServer();
    const created = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid}/schedules`,
      payload: { name: 'keep' },
    });
    const id = created.json().attributes.id;
    const res = await h.request(owner.token, {
      method: 'PUT',
      url: `/api/client/servers/${server.uuid}/schedules/${id}`,
      payload: { name: 'changed', minute: '99' },
    });
    expect(res.statusCode).toBe(422);
    const row = await h.db.db.selectFrom('schedules').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.name).toBe('keep');
    expect((await events(server.id)).map((e) => e.event)).toEqual(['server:schedule.create']);
  });

  it('lists, shows and deletes schedules; ids of another server are 404', async () => {
    const { owner, server } = await h.make.ownedServer();
    const other = await h.make.server(owner.user);
    const created = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid}/schedules`,
      payload: { name: 'a' },
    });
    const id = created.json().attributes.id;
    const listed = await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid}/schedules` });
    expect(listed.json()).toMatchObject({ object: 'list', data: [{ object: 'server_schedule', attributes: { id } }] });
    expect(
      (await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid}/schedules/${id}` })).statusCode,
    ).toBe(200);
    for (const method of ['GET', 'PUT', 'POST', 'PATCH', 'DELETE'] as const) {
      const res = await h.request(owner.token, {
        method,
        url: `/api/client/servers/${other.uuid}/schedules/${id}`,
        payload: method === 'GET' || method === 'DELETE' ? undefined : {},
      });
      expect(res.statusCode, method).toBe(404);
    }
    for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999']) {
      expect(
        (await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid}/schedules/${bad}` })).statusCode,
      ).toBe(404);
    }
    const deleted = await h.request(owner.token, { method: 'DELETE', url: `/api/client/servers/${server.uuid}/schedules/${id}` });
    expect(deleted.statusCode).toBe(204);
    expect(deleted.body).toBe('');
    expect(
      (await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid}/schedules/${id}` })).statusCode,
    ).toBe(404);
    expect((await events(server.id)).map((e) => e.event)).toEqual(['server:schedule.create', 'server:schedule.delete']);
  });

  it('interprets cron fields in APP_TIMEZONE', async () => {
    // A second harness would be heavy; compute through the service's own cron with the configured zone instead.
    const { owner, server } = await h.make.ownedServer();
    h.clock.set(Date.parse('2026-07-01T00:00:00Z'));
    const res = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid}/schedules`,
      payload: { name: 'utc', minute: '0', hour: '6' },
    });
    expect(res.json().attributes.next_run_at).toBe('2026-07-01T06:00:00+00:00');
  });
});

describeEachDatabase('schedules in another time zone', (database) => {
  const h = useHarness(database, { APP_TIMEZONE: 'Europe/Berlin' });
  it('computes next_run_at in the panel time zone', async () => {
    const { owner, server } = await h.make.ownedServer();
    h.clock.set(Date.parse('2026-07-01T00:00:00Z'));
    const res = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid}/schedules`,
      payload: { name: 'berlin', minute: '0', hour: '6' },
    });
    // 06:00 in Berlin (CEST, +02:00) is 04:00 UTC.
    expect(res.json().attributes.next_run_at).toBe('2026-07-01T04:00:00+00:00');
  });
});
