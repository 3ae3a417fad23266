import { sql } from 'kysely';
import { afterEach, expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness, type Harness } from '../helpers/harness.js';

/**
 * docs/reference/activity.md#entries: an activity entry is written in the same transaction as the change
 * it records. A database trigger makes one half fail midway through a request
 * (the entry's insert, or the change itself); afterwards neither half may be
 * there: no change without its entry, no entry without its change.
 */
describeEachDatabase('a change and its activity entry commit together', (database) => {
  const h = useHarness(database);

  /** Makes every statement of `operation` on `table` fail (optionally only for one event) until removed. */
  async function failOn(harness: Harness, table: string, operation: 'INSERT' | 'UPDATE' | 'DELETE', event?: string) {
    const db = harness.db.db;
    if (harness.db.dialect === 'sqlite') {
      const when = event ? `WHEN NEW.event = '${event}'` : '';
      const row = operation === 'DELETE' ? '' : when;
      await sql
        .raw(
          `CREATE TRIGGER fail_midway BEFORE ${operation} ON ${table} FOR EACH ROW ${row} BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
        )
        .execute(db);
    } else {
      const condition = event
        ? `IF NEW.event = '${event}' THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW;`
        : `RAISE EXCEPTION 'injected failure';`;
      await sql
        .raw(`CREATE OR REPLACE FUNCTION fail_midway() RETURNS trigger AS $$ BEGIN ${condition} END $$ LANGUAGE plpgsql`)
        .execute(db);
      await sql
        .raw(`CREATE TRIGGER fail_midway BEFORE ${operation} ON ${table} FOR EACH ROW EXECUTE FUNCTION fail_midway()`)
        .execute(db);
    }
    return async () => {
      if (harness.db.dialect === 'sqlite') await sql.raw('DROP TRIGGER fail_midway').execute(db);
      else await sql.raw(`DROP TRIGGER fail_midway ON ${table}`).execute(db);
    };
  }

  let removeTrigger: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await removeTrigger?.();
    removeTrigger = undefined;
    await h.jobs.idle();
  });

  const entries = (server: ServerRow) =>
    h.db.db.selectFrom('activity_logs').select('event').where('server_id', '=', server.id).execute();

  function expectGenericFailure(res: { statusCode: number; body: string }) {
    expect(res.statusCode).toBe(500);
    expect(res.body).not.toMatch(/injected|trigger|insert|update|delete|select/i);
    expect(JSON.parse(res.body).errors[0]).toMatchObject({ code: 'InternalServerError', status: '500' });
  }

  async function scheduleWithTask(owner: string, server: ServerRow) {
    const schedule = (
      await h.request(owner, {
        method: 'POST',
        url: `/api/client/servers/${server.uuid}/schedules`,
        payload: { name: 'nightly' },
      })
    ).json().attributes;
    const task = (
      await h.request(owner, {
        method: 'POST',
        url: `/api/client/servers/${server.uuid}/schedules/${schedule.id}/tasks`,
        payload: { action: 'command', payload: 'say hi', time_offset: 0 },
      })
    ).json().attributes;
    return { schedule, task };
  }

  it('schedule create: the entry fails, so no schedule is created', async () => {
    const { owner, server } = await h.make.ownedServer();
    removeTrigger = await failOn(h, 'activity_logs', 'INSERT', 'server:schedule.create');
    const res = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid}/schedules`,
      payload: { name: 'x' },
    });
    expectGenericFailure(res);
    expect(await h.db.db.selectFrom('schedules').select('id').where('server_id', '=', server.id).execute()).toEqual([]);
    expect(await entries(server)).toEqual([]);
  });

  it('schedule update: the entry fails, so the schedule keeps its values', async () => {
    const { owner, server } = await h.make.ownedServer();
    const { schedule } = await scheduleWithTask(owner.token, server);
    const before = await entries(server);
    removeTrigger = await failOn(h, 'activity_logs', 'INSERT', 'server:schedule.update');
    const res = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid}/schedules/${schedule.id}`,
      payload: { name: 'renamed', is_active: false },
    });
    expectGenericFailure(res);
    const row = await h.db.db.selectFrom('schedules').selectAll().where('id', '=', schedule.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ name: 'nightly', is_active: 1 });
    expect(await entries(server)).toEqual(before);
  });

  it('schedule delete: the delete fails, so no entry is written', async () => {
    const { owner, server } = await h.make.ownedServer();
    const { schedule } = await scheduleWithTask(owner.token, server);
    const before = await entries(server);
    removeTrigger = await failOn(h, 'schedules', 'DELETE');
    const res = await h.request(owner.token, {
      method: 'DELETE',
      url: `/api/client/servers/${server.uuid}/schedules/${schedule.id}`,
    });
    expectGenericFailure(res);
    expect(await h.db.db.selectFrom('schedules').select('id').where('id', '=', schedule.id).execute()).toHaveLength(1);
    expect(await entries(server)).toEqual(before);
  });

  it('task create, update and delete: nothing changes when the entry fails', async () => {
    const { owner, server } = await h.make.ownedServer();
    const { schedule, task } = await scheduleWithTask(owner.token, server);
    const base = `/api/client/servers/${server.uuid}/schedules/${schedule.id}/tasks`;
    const before = await entries(server);

    removeTrigger = await failOn(h, 'activity_logs', 'INSERT');
    expectGenericFailure(
      await h.request(owner.token, {
        method: 'POST',
        url: base,
        payload: { action: 'command', payload: 'say 2', time_offset: 5, sequence_id: 1 },
      }),
    );
    expectGenericFailure(
      await h.request(owner.token, { method: 'POST', url: `${base}/${task.id}`, payload: { payload: 'say changed' } }),
    );
    expectGenericFailure(await h.request(owner.token, { method: 'DELETE', url: `${base}/${task.id}` }));

    const tasks = await h.db.db.selectFrom('tasks').selectAll().where('schedule_id', '=', schedule.id).execute();
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({ id: task.id, sequence_id: 1, payload: 'say hi' });
    expect(await entries(server)).toEqual(before);
  });

  it('backup lock and delete: nothing changes when the entry fails', async () => {
    const { owner, server } = await h.make.ownedServer();
    const created = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid}/backups`,
      payload: {},
    });
    expect(created.statusCode).toBe(200);
    await h.jobs.idle();
    const uuid = created.json().attributes.uuid as string;
    const before = await entries(server);

    removeTrigger = await failOn(h, 'activity_logs', 'INSERT');
    expectGenericFailure(
      await h.request(owner.token, { method: 'POST', url: `/api/client/servers/${server.uuid}/backups/${uuid}/lock` }),
    );
    expectGenericFailure(
      await h.request(owner.token, { method: 'DELETE', url: `/api/client/servers/${server.uuid}/backups/${uuid}` }),
    );

    const row = await h.db.db.selectFrom('backups').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow();
    expect(row.is_locked).toBe(0);
    expect(await entries(server)).toEqual(before);
  });

  it('restore: when the entry fails the server is not left restoring, and the restore never starts', async () => {
    const { owner, server } = await h.make.ownedServer();
    const created = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid}/backups`,
      payload: {},
    });
    await h.jobs.idle();
    const uuid = created.json().attributes.uuid as string;
    const before = await entries(server);

    removeTrigger = await failOn(h, 'activity_logs', 'INSERT', 'server:backup.restore');
    expectGenericFailure(
      await h.request(owner.token, { method: 'POST', url: `/api/client/servers/${server.uuid}/backups/${uuid}/restore` }),
    );
    await h.jobs.idle();
    const row = await h.db.db.selectFrom('servers').select('status').where('id', '=', server.id).executeTakeFirstOrThrow();
    expect(row.status).toBeNull();
    expect(await entries(server)).toEqual(before);
  });
});
