import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it, vi } from 'vitest';
import type { NewBackup, ServerRow } from '../../src/db/schema.js';
import { insertBackup } from '../../src/modules/backups/backups.repository.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;

describeEachDatabase('backups', (database) => {
  const h = useHarness(database);

  const url = (server: ServerRow, rest = '') => `/api/client/servers/${server.uuid_short}/backups${rest}`;

  async function events(server: ServerRow) {
    const rows = await h.db.db.selectFrom('activity_logs').selectAll().where('server_id', '=', server.id).orderBy('id').execute();
    return rows.map((r) => ({
      event: r.event,
      actor_id: r.actor_id,
      ip: r.ip,
      properties: JSON.parse(r.properties) as Record<string, unknown>,
    }));
  }

  async function backupRows(server: ServerRow) {
    return h.db.db.selectFrom('backups').selectAll().where('server_id', '=', server.id).orderBy('id').execute();
  }

  /** A backup row written directly (no archive): for tests about the API around it. */
  async function insertRow(server: ServerRow, values: Partial<NewBackup> = {}) {
    return insertBackup(h.db.db, {
      uuid: randomUUID(),
      server_id: server.id,
      name: `backup ${randomUUID().slice(0, 6)}`,
      ignored_files: '[]',
      checksum: `sha1:${'a'.repeat(40)}`,
      bytes: 10,
      is_successful: 1,
      is_locked: 0,
      created_at: h.clock.now(),
      completed_at: h.clock.now(),
      ...values,
    });
  }

  function writeVolume(server: ServerRow, files: Record<string, string>) {
    const volume = h.daemon.volumeDir(server.uuid);
    for (const [name, content] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(volume, name)), { recursive: true });
      fs.writeFileSync(path.join(volume, name), content);
    }
  }

  it('creates a backup: 200 at once, then completes in the background with checksum and size', async () => {
    const { owner, server } = await h.make.ownedServer();
    writeVolume(server, { 'server.properties': 'motd=hi\n', 'world/level.dat': 'x'.repeat(1000) });
    const res = await h.request(owner.token, { method: 'POST', url: url(server), payload: { name: '  nightly  ' } });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.object).toBe('backup');
    expect(body.attributes).toEqual({
      uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      is_successful: false,
      is_locked: false,
      name: 'nightly',
      ignored_files: [],
      checksum: null,
      bytes: 0,
      created_at: expect.stringMatching(ISO),
      completed_at: null,
    });

    await h.jobs.idle();
    const shown = await h.request(owner.token, { method: 'GET', url: url(server, `/${body.attributes.uuid}`) });
    expect(shown.statusCode).toBe(200);
    const done = shown.json().attributes;
    expect(done.is_successful).toBe(true);
    expect(done.completed_at).toMatch(ISO);
    const archive = fs.readFileSync(h.daemon.backupPath(body.attributes.uuid));
    expect(done.checksum).toBe(`sha1:${createHash('sha1').update(archive).digest('hex')}`);
    expect(done.bytes).toBe(archive.length);

    expect(await events(server)).toEqual([
      {
        event: 'server:backup.start',
        actor_id: owner.user.id,
        ip: expect.any(String),
        properties: { name: 'nightly', locked: false },
      },
      { event: 'server:backup.complete', actor_id: null, ip: null, properties: { name: 'nightly' } },
    ]);
  });

  it('defaults the name, splits ignored patterns, and honours is_locked for callers who may delete', async () => {
    const { owner, server } = await h.make.ownedServer();
    const res = await h.request(owner.token, {
      method: 'POST',
      url: url(server),
      payload: { ignored: '*.log\r\n\n  cache/  \nworld/tmp', is_locked: '1' },
    });
    expect(res.statusCode).toBe(200);
    const attrs = res.json().attributes;
    expect(attrs.name).toMatch(/^Backup at \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(attrs.ignored_files).toEqual(['*.log', 'cache/', 'world/tmp']);
    expect(attrs.is_locked).toBe(true);
    await h.jobs.idle();
    expect((await events(server))[0]).toMatchObject({ event: 'server:backup.start', properties: { locked: true } });

    // A subuser without backup.delete cannot make undeletable backups (Pterodactyl's rule).
    const sub = await h.make.subuser(server, ['backup.create']);
    const bySub = await h.request(sub.token, { method: 'POST', url: url(server), payload: { is_locked: true } });
    expect(bySub.statusCode).toBe(200);
    expect(bySub.json().attributes.is_locked).toBe(false);
    await h.jobs.idle();
  });

  it('records a failed backup and logs server:backup.fail', async () => {
    const { owner, server } = await h.make.ownedServer();
    const spy = vi.spyOn(h.daemon, 'createBackup').mockRejectedValueOnce(new Error('disk full'));
    try {
      const res = await h.request(owner.token, { method: 'POST', url: url(server), payload: { name: 'doomed' } });
      expect(res.statusCode).toBe(200);
      await h.jobs.idle();
    } finally {
      spy.mockRestore();
    }
    const [row] = await backupRows(server);
    expect(row).toMatchObject({ is_successful: 0, checksum: null });
    expect(row!.completed_at).not.toBeNull();
    expect((await events(server)).map((e) => [e.event, e.actor_id, e.properties])).toEqual([
      ['server:backup.start', owner.user.id, { name: 'doomed', locked: false }],
      ['server:backup.fail', null, { name: 'doomed' }],
    ]);
  });

  it('validates the create body and writes nothing when it fails', async () => {
    const { owner, server } = await h.make.ownedServer();
    const cases: [unknown, string, string][] = [
      [{ name: 'n'.repeat(192) }, 'name', 'max'],
      [{ is_locked: 'maybe' }, 'is_locked', 'boolean'],
      [{ ignored: 5 }, 'ignored', 'string'],
      [{ name: ['a'] }, 'name', 'string'],
    ];
    for (const [payload, field, rule] of cases) {
      const res = await h.request(owner.token, { method: 'POST', url: url(server), payload: payload as object });
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.json().errors[0]).toMatchObject({
        code: 'ValidationException',
        status: '422',
        meta: { source_field: field, rule },
      });
    }
    // 191 code points (astral characters count once) is fine.
    const ok = await h.request(owner.token, { method: 'POST', url: url(server), payload: { name: '😀'.repeat(191) } });
    expect(ok.statusCode).toBe(200);
    await h.jobs.idle();
    expect(await backupRows(server)).toHaveLength(1);
    expect((await events(server)).map((e) => e.event)).toEqual(['server:backup.start', 'server:backup.complete']);

    for (const payload of ['[]', '"x"', '42']) {
      const res = await h.request(owner.token, {
        method: 'POST',
        url: url(server),
        payload,
        headers: { 'content-type': 'application/json' },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().errors[0].code).toBe('BadRequestHttpException');
    }
    expect(await backupRows(server)).toHaveLength(1);
  });

  it('enforces the backup limit: 400 at the limit (failed backups do not count), 403 when the limit is 0', async () => {
    const { owner, server } = await h.make.ownedServer({ backupLimit: 2 });
    await insertRow(server);
    await insertRow(server, { is_successful: 0 }); // failed: does not count
    await insertRow(server, { is_successful: 0, completed_at: null, checksum: null }); // running: counts
    const res = await h.request(owner.token, { method: 'POST', url: url(server), payload: {} });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([
      {
        code: 'ServiceLimitExceededException',
        status: '400',
        detail: 'Cannot create a new backup, this server has reached its limit of 2 backups.',
      },
    ]);
    expect(await backupRows(server)).toHaveLength(3);
    expect(await events(server)).toEqual([]);

    const { owner: owner0, server: none } = await h.make.ownedServer({ backupLimit: 0 });
    const zero = await h.request(owner0.token, { method: 'POST', url: url(none), payload: {} });
    // docs/reference/api.md#errors: a limit of 0 is reached at once (Pterodactyl's TooManyBackupsException).
    expect(zero.statusCode).toBe(400);
    expect(zero.json().errors[0].code).toBe('ServiceLimitExceededException');
    expect(await backupRows(none)).toEqual([]);
  });

  it('never lets concurrent creations overshoot the limit', async () => {
    const { owner, server } = await h.make.ownedServer({ backupLimit: 2 });
    const results = await Promise.all(
      Array.from({ length: 5 }, () => h.request(owner.token, { method: 'POST', url: url(server), payload: {} })),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 200, 400, 400, 400]);
    await h.jobs.idle();
    expect(await backupRows(server)).toHaveLength(2);
  });

  it('lists backups newest first with pagination and backup_count', async () => {
    const { owner, server } = await h.make.ownedServer();
    const names: string[] = [];
    for (let i = 0; i < 5; i++) {
      const row = await insertRow(server, { name: `b${i}`, ...(i === 1 ? { is_successful: 0 } : {}) });
      names.push(row.name);
      h.clock.advance(1000);
    }
    const all = await h.request(owner.token, { method: 'GET', url: url(server) });
    expect(all.statusCode).toBe(200);
    expect(all.json().object).toBe('list');
    expect(all.json().data.map((b: { attributes: { name: string } }) => b.attributes.name)).toEqual([
      'b4',
      'b3',
      'b2',
      'b1',
      'b0',
    ]);
    expect(all.json().data[0].object).toBe('backup');
    expect(all.json().meta).toEqual({
      pagination: { total: 5, count: 5, per_page: 20, current_page: 1, total_pages: 1, links: {} },
      backup_count: 4,
    });

    const page = await h.request(owner.token, { method: 'GET', url: url(server, '?per_page=2&page=2') });
    expect(page.json().data.map((b: { attributes: { name: string } }) => b.attributes.name)).toEqual(['b2', 'b1']);
    expect(page.json().meta.pagination).toMatchObject({ total: 5, count: 2, per_page: 2, current_page: 2, total_pages: 3 });
    expect(page.json().meta.pagination.links).toEqual({
      previous: `http://quetzal.test${url(server)}?per_page=2&page=1`,
      next: `http://quetzal.test${url(server)}?per_page=2&page=3`,
    });

    const past = await h.request(owner.token, { method: 'GET', url: url(server, '?page=9') });
    expect(past.json().data).toEqual([]);
    expect(past.json().meta.pagination.current_page).toBe(9);

    for (const q of ['per_page=0', 'per_page=51', 'per_page=abc', 'page=0', 'per_page[]=2']) {
      const bad = await h.request(owner.token, { method: 'GET', url: url(server, `?${q}`) });
      expect(bad.statusCode, q).toBe(422);
    }
    expect((await h.request(owner.token, { method: 'GET', url: url(server, '?per_page=50') })).statusCode).toBe(200);
  });

  it('shows one backup by UUID under the full UUID and the short identifier', async () => {
    const { owner, server } = await h.make.ownedServer();
    const row = await insertRow(server, { ignored_files: JSON.stringify(['*.log']), is_locked: 1 });
    for (const ref of [server.uuid, server.uuid_short]) {
      const res = await h.request(owner.token, {
        method: 'GET',
        url: `/api/client/servers/${ref}/backups/${row.uuid.toUpperCase()}`,
      });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        object: 'backup',
        attributes: {
          uuid: row.uuid,
          is_successful: true,
          is_locked: true,
          name: row.name,
          ignored_files: ['*.log'],
          checksum: row.checksum,
          bytes: 10,
          created_at: expect.stringMatching(ISO),
          completed_at: expect.stringMatching(ISO),
        },
      });
    }
  });

  it('deletes a backup and its archive, logging server:backup.delete', async () => {
    const { owner, server } = await h.make.ownedServer();
    const created = await h.request(owner.token, { method: 'POST', url: url(server), payload: { name: 'gone' } });
    await h.jobs.idle();
    const uuid = created.json().attributes.uuid as string;
    expect(fs.existsSync(h.daemon.backupPath(uuid))).toBe(true);

    const res = await h.request(owner.token, { method: 'DELETE', url: url(server, `/${uuid}`) });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(fs.existsSync(h.daemon.backupPath(uuid))).toBe(false);
    expect(await backupRows(server)).toEqual([]);
    expect((await events(server)).at(-1)).toEqual({
      event: 'server:backup.delete',
      actor_id: owner.user.id,
      ip: expect.any(String),
      properties: { name: 'gone', failed: false },
    });
    expect((await h.request(owner.token, { method: 'GET', url: url(server, `/${uuid}`) })).statusCode).toBe(404);
  });

  it('refuses to delete a locked backup (400) or one still running (409); a failed one goes even when locked', async () => {
    const { owner, server } = await h.make.ownedServer();
    const locked = await insertRow(server, { is_locked: 1 });
    const res = await h.request(owner.token, { method: 'DELETE', url: url(server, `/${locked.uuid}`) });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([
      { code: 'DisplayException', status: '400', detail: 'Cannot delete a backup that is marked as locked.' },
    ]);

    const running = await insertRow(server, { completed_at: null, is_successful: 0, checksum: null });
    const busy = await h.request(owner.token, { method: 'DELETE', url: url(server, `/${running.uuid}`) });
    expect(busy.statusCode).toBe(409);
    expect(busy.json().errors[0].code).toBe('ConflictHttpException');
    expect(await backupRows(server)).toHaveLength(2);
    expect(await events(server)).toEqual([]);

    const failed = await insertRow(server, { is_successful: 0, is_locked: 1, checksum: null, name: 'broken' });
    expect((await h.request(owner.token, { method: 'DELETE', url: url(server, `/${failed.uuid}`) })).statusCode).toBe(204);
    expect((await events(server)).map((e) => [e.event, e.properties])).toEqual([
      ['server:backup.delete', { name: 'broken', failed: true }],
    ]);
  });

  it('toggles the lock and logs lock / unlock', async () => {
    const { owner, server } = await h.make.ownedServer();
    const row = await insertRow(server, { name: 'keep' });
    const first = await h.request(owner.token, { method: 'POST', url: url(server, `/${row.uuid}/lock`) });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ object: 'backup', attributes: { uuid: row.uuid, is_locked: true } });
    const second = await h.request(owner.token, { method: 'POST', url: url(server, `/${row.uuid}/lock`) });
    expect(second.json().attributes.is_locked).toBe(false);
    expect((await events(server)).map((e) => [e.event, e.actor_id, e.properties])).toEqual([
      ['server:backup.lock', owner.user.id, { name: 'keep' }],
      ['server:backup.unlock', owner.user.id, { name: 'keep' }],
    ]);
  });

  it('checks each backup permission (403), even before the body', async () => {
    const { server } = await h.make.ownedServer();
    const row = await insertRow(server);
    const victim = await insertRow(server);
    const routes: { perm: string; method: 'GET' | 'POST' | 'DELETE'; path: string; payload?: object; ok: number }[] = [
      { perm: 'backup.read', method: 'GET', path: '', ok: 200 },
      { perm: 'backup.read', method: 'GET', path: `/${row.uuid}`, ok: 200 },
      { perm: 'backup.create', method: 'POST', path: '', payload: {}, ok: 200 },
      { perm: 'backup.delete', method: 'POST', path: `/${row.uuid}/lock`, ok: 200 },
      { perm: 'backup.delete', method: 'DELETE', path: `/${victim.uuid}`, ok: 204 },
    ];
    const others = ['schedule.read', 'activity.read', 'backup.download', 'backup.restore'];
    for (const route of routes) {
      const without = await h.make.subuser(server, [
        ...others,
        ...['backup.read', 'backup.create', 'backup.delete'].filter((p) => p !== route.perm),
      ]);
      const denied = await h.request(without.token, {
        method: route.method,
        url: url(server, route.path),
        ...(route.payload ? { payload: route.payload } : {}),
      });
      expect(denied.statusCode, `${route.method} ${route.path} without ${route.perm}`).toBe(403);
      expect(denied.json().errors[0].code).toBe('AccessDeniedHttpException');
    }
    // 403 wins over an invalid body.
    const noCreate = await h.make.subuser(server, ['backup.read']);
    const invalid = await h.request(noCreate.token, { method: 'POST', url: url(server), payload: { name: 'n'.repeat(500) } });
    expect(invalid.statusCode).toBe(403);

    for (const route of routes) {
      const holder = await h.make.subuser(server, [route.perm]);
      const allowed = await h.request(holder.token, {
        method: route.method,
        url: url(server, route.path),
        ...(route.payload ? { payload: route.payload } : {}),
      });
      expect(allowed.statusCode, `${route.method} ${route.path} with ${route.perm}`).toBe(route.ok);
      // Subusers' entries are theirs.
      if (route.ok !== 200 || route.method !== 'GET') {
        expect((await events(server)).some((e) => e.actor_id === holder.user.id)).toBe(true);
      }
    }
    await h.jobs.idle();
  });

  it("is a 404 for another server's backup, an unknown or malformed UUID, and a server the caller cannot see", async () => {
    const { owner, server } = await h.make.ownedServer();
    const other = await h.make.server(owner.user);
    const foreign = await insertRow(other);
    const paths = [`/${foreign.uuid}`, `/${randomUUID()}`, '/not-a-uuid', `/${foreign.uuid}x`, '/123'];
    for (const p of paths) {
      for (const [method, suffix] of [
        ['GET', ''],
        ['DELETE', ''],
        ['POST', '/lock'],
        ['POST', '/restore'],
      ] as const) {
        const res = await h.request(owner.token, { method, url: url(server, p + suffix) });
        expect(res.statusCode, `${method} ${p}${suffix}`).toBe(404);
        expect(res.json().errors[0].code).toBe('NotFoundHttpException');
      }
    }
    // A subuser without any permission still gets 404, not 403, for ids of other tenants.
    const sub = await h.make.subuser(server, []);
    expect((await h.request(sub.token, { method: 'DELETE', url: url(server, `/${foreign.uuid}`) })).statusCode).toBe(404);
    const stranger = await h.make.user();
    expect((await h.request(stranger.token, { method: 'GET', url: url(other) })).statusCode).toBe(404);
    expect((await h.request(stranger.token, { method: 'GET', url: url(other, `/${foreign.uuid}`) })).statusCode).toBe(404);
    expect(await backupRows(other)).toHaveLength(1);
    expect(await events(other)).toEqual([]);
  });

  it('answers 409 by server status: suspended blocks all, installing blocks changes, restoring blocks create and delete', async () => {
    const { owner, server } = await h.make.ownedServer();
    const row = await insertRow(server);
    const call = (method: 'GET' | 'POST' | 'DELETE', p: string) =>
      h.request(owner.token, { method, url: url(server, p), ...(method === 'POST' ? { payload: {} } : {}) });
    const matrix: [string, Record<string, number>][] = [
      ['suspended', { list: 409, show: 409, create: 409, lock: 409, delete: 409 }],
      ['installing', { list: 200, show: 200, create: 409, lock: 409, delete: 409 }],
      ['install_failed', { list: 200, show: 200, create: 409, lock: 409, delete: 409 }],
      ['restoring_backup', { list: 200, show: 200, create: 409, lock: 200, delete: 409 }],
    ];
    for (const [status, expected] of matrix) {
      await h.make.setStatus(server, status as 'suspended');
      const got = {
        list: (await call('GET', '')).statusCode,
        show: (await call('GET', `/${row.uuid}`)).statusCode,
        create: (await call('POST', '')).statusCode,
        lock: (await call('POST', `/${row.uuid}/lock`)).statusCode,
        delete: (await call('DELETE', `/${row.uuid}`)).statusCode,
      };
      expect(got, status).toEqual(expected);
    }
    await h.make.setStatus(server, null);
    expect(await backupRows(server)).toHaveLength(1);
    expect((await events(server)).map((e) => e.event)).toEqual(['server:backup.lock']);
  });
});
