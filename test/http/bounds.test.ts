import { expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

/** docs/reference/api.md#errors and docs/reference/backups-and-restores.md#durability: ids and numbers out of any column's range, and oversized `ignored` lists, are a documented 404/422, never a 500. */
describeEachDatabase('bounds on ids, numbers and ignore lists', (database) => {
  const h = useHarness(database);

  const base = (server: ServerRow) => `/api/client/servers/${server.uuid_short}`;
  async function scheduleOf(token: string, server: ServerRow) {
    const res = await h.request(token, { method: 'POST', url: `${base(server)}/schedules`, payload: { name: 'bounds' } });
    expect(res.statusCode).toBe(200);
    return res.json().attributes.id as number;
  }
  async function taskOf(token: string, server: ServerRow, schedule: number) {
    const res = await h.request(token, {
      method: 'POST',
      url: `${base(server)}/schedules/${schedule}/tasks`,
      payload: { action: 'command', payload: 'say hi', time_offset: 0 },
    });
    expect(res.statusCode).toBe(200);
    return res.json().attributes.id as number;
  }
  const expectNotFound = (res: { statusCode: number; json(): unknown }, what: string) => {
    expect(res.statusCode, what).toBe(404);
    expect(res.json(), what).toEqual({ errors: [{ code: 'NotFoundHttpException', status: '404', detail: expect.any(String) }] });
  };

  it('a schedule or task id past any integer column is a 404, on every method that names it', async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await scheduleOf(owner.token, server);
    const task = await taskOf(owner.token, server, schedule);
    const huge = [
      '2147483648',
      '4294967296',
      '9999999999',
      '9223372036854775808',
      '99999999999999999999',
      '1e3',
      '0x10',
      '-1',
      '0',
      '01',
    ];
    for (const id of huge) {
      for (const [method, url] of [
        ['GET', `${base(server)}/schedules/${id}`],
        ['POST', `${base(server)}/schedules/${id}`],
        ['DELETE', `${base(server)}/schedules/${id}`],
        ['POST', `${base(server)}/schedules/${id}/execute`],
        ['POST', `${base(server)}/schedules/${id}/tasks`],
        ['PUT', `${base(server)}/schedules/${schedule}/tasks/${id}`],
        ['DELETE', `${base(server)}/schedules/${schedule}/tasks/${id}`],
        ['DELETE', `${base(server)}/schedules/${id}/tasks/${task}`],
      ] as const) {
        expectNotFound(await h.request(owner.token, { method, url, payload: {} }), `${method} ${url}`);
      }
    }
    // The largest id a column holds is looked up like any other.
    expectNotFound(await h.request(owner.token, { method: 'GET', url: `${base(server)}/schedules/2147483647` }), 'max int');
    const found = await h.request(owner.token, { method: 'GET', url: `${base(server)}/schedules/${schedule}` });
    expect(found.statusCode).toBe(200);
  });

  it('a malformed backup uuid is a 404', async () => {
    const { owner, server } = await h.make.ownedServer();
    const malformed = [
      '-'.repeat(36),
      'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz',
      '0000000000000000000000000000000000000',
      '00000000-0000-0000-0000-0000000000000',
      '00000000-0000-0000-0000-00000000000',
      '123',
      '00000000-0000-0000-0000-000000000000',
      '%00',
    ];
    for (const id of malformed) {
      for (const [method, url] of [
        ['GET', `${base(server)}/backups/${id}`],
        ['DELETE', `${base(server)}/backups/${id}`],
        ['POST', `${base(server)}/backups/${id}/lock`],
        ['POST', `${base(server)}/backups/${id}/restore`],
      ] as const) {
        expectNotFound(await h.request(owner.token, { method, url }), `${method} ${url}`);
      }
    }
  });

  it('a sequence id past the column is a 422, and the largest one is accepted', async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await scheduleOf(owner.token, server);
    const tasks = `${base(server)}/schedules/${schedule}/tasks`;
    for (const sequence of [2147483648, '2147483648', 1e20, '99999999999999999999']) {
      const res = await h.request(owner.token, {
        method: 'POST',
        url: tasks,
        payload: { action: 'command', payload: 'x', time_offset: 0, sequence_id: sequence },
      });
      expect(res.statusCode, String(sequence)).toBe(422);
      expect(res.json().errors[0]).toMatchObject({
        code: 'ValidationException',
        meta: { source_field: 'sequence_id', rule: 'max' },
      });
    }
    const task = await taskOf(owner.token, server, schedule);
    const moved = await h.request(owner.token, { method: 'PUT', url: `${tasks}/${task}`, payload: { sequence_id: 4294967296 } });
    expect(moved.statusCode).toBe(422);
    expect(moved.json().errors[0].meta).toEqual({ source_field: 'sequence_id', rule: 'max' });
    const largest = await h.request(owner.token, {
      method: 'POST',
      url: tasks,
      payload: { action: 'command', payload: 'x', time_offset: 0, sequence_id: 2147483647 },
    });
    expect(largest.statusCode).toBe(200);
    for (const offset of [2147483648, '99999999999999999999', 1e300]) {
      const res = await h.request(owner.token, {
        method: 'POST',
        url: tasks,
        payload: { action: 'command', payload: 'x', time_offset: offset },
      });
      expect(res.statusCode, String(offset)).toBe(422);
      expect(res.json().errors[0].meta.source_field).toBe('time_offset');
    }
  });

  it('the last pages of a listing are served, never a 500, and pages past a safe integer are a 422', async () => {
    const { owner, server } = await h.make.ownedServer();
    for (const url of [`${base(server)}/backups`, `${base(server)}/activity`, '/api/client']) {
      for (const query of ['page=9007199254740991&per_page=50', 'page=2147483648', 'page=9007199254740991&per_page=1']) {
        const res = await h.request(owner.token, { method: 'GET', url: `${url}?${query}` });
        expect(res.statusCode, `${url}?${query}`).toBe(200);
        expect(res.json().data).toEqual([]);
      }
      const past = await h.request(owner.token, { method: 'GET', url: `${url}?page=9007199254740992` });
      expect(past.statusCode).toBe(422);
      expect(past.json().errors[0].meta).toEqual({ source_field: 'page', rule: 'max' });
    }
  });

  it('a backup limit of 0 is a 400 ServiceLimitExceededException', async () => {
    const { owner, server } = await h.make.ownedServer({ backupLimit: 0 });
    const res = await h.request(owner.token, { method: 'POST', url: `${base(server)}/backups`, payload: {} });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      errors: [{ code: 'ServiceLimitExceededException', status: '400', detail: expect.any(String) }],
    });
    expect(await h.db.db.selectFrom('backups').select('id').where('server_id', '=', server.id).execute()).toEqual([]);
  });

  const patterns = (n: number) => Array.from({ length: n }, (_, i) => `logs/p${i}`).join('\n');
  const BOUND = 64 * 1024;

  it('POST /backups takes `ignored` up to 64 KiB and 1,000 patterns, and refuses one byte or one pattern more with a 422', async () => {
    const { owner, server } = await h.make.ownedServer({ backupLimit: 100 });
    const create = (ignored: string) =>
      h.request(owner.token, { method: 'POST', url: `${base(server)}/backups`, payload: { ignored } });
    const refused = async (ignored: string, what: string) => {
      const res = await create(ignored);
      expect(res.statusCode, what).toBe(422);
      expect(res.json().errors).toEqual([
        {
          code: 'ValidationException',
          status: '422',
          detail: expect.any(String),
          meta: { source_field: 'ignored', rule: 'max' },
        },
      ]);
    };
    const atCount = await create(`${patterns(1000)}\n\n\n`);
    expect(atCount.statusCode).toBe(200);
    expect(atCount.json().attributes.ignored_files).toHaveLength(1000);
    await refused(patterns(1001), '1001 patterns');

    const atBytes = `${'a'.repeat(BOUND - 2)}\nb`;
    expect(Buffer.byteLength(atBytes)).toBe(BOUND);
    expect((await create(atBytes)).statusCode).toBe(200);
    await refused(`${atBytes}c`, '64 KiB + 1 byte');
    // Bytes, not characters: 'é' is two of them.
    expect((await create('é'.repeat(BOUND / 2))).statusCode).toBe(200);
    await refused(`${'é'.repeat(BOUND / 2)}a`, '64 KiB of é + 1 byte');
    await h.jobs.idle();
  });

  it("a backup task's payload has the same bounds, on create and on update", async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await scheduleOf(owner.token, server);
    const tasks = `${base(server)}/schedules/${schedule}/tasks`;
    const create = (payload: string) =>
      h.request(owner.token, { method: 'POST', url: tasks, payload: { action: 'backup', time_offset: 0, payload } });
    const refusedOn = (res: { statusCode: number; json(): { errors: Array<{ meta: object }> } }, what: string) => {
      expect(res.statusCode, what).toBe(422);
      expect(res.json().errors[0].meta, what).toEqual({ source_field: 'payload', rule: 'max' });
    };
    const atCount = await create(patterns(1000));
    expect(atCount.statusCode).toBe(200);
    refusedOn(await create(patterns(1001)), '1001 patterns');
    // 'é' is two bytes: at the byte bound while under the schema's 65,535 characters.
    expect((await create('é'.repeat(BOUND / 2))).statusCode).toBe(200);
    refusedOn(await create(`${'é'.repeat(BOUND / 2)}a`), '64 KiB + 1 byte');

    const id = atCount.json().attributes.id as number;
    refusedOn(
      await h.request(owner.token, { method: 'PUT', url: `${tasks}/${id}`, payload: { payload: patterns(1001) } }),
      'update',
    );
    const command = await h.request(owner.token, {
      method: 'POST',
      url: tasks,
      payload: { action: 'command', payload: 'x', time_offset: 0 },
    });
    refusedOn(
      await h.request(owner.token, {
        method: 'PUT',
        url: `${tasks}/${command.json().attributes.id}`,
        payload: { action: 'backup', payload: patterns(1001) },
      }),
      'update to a backup task',
    );
  });
});
