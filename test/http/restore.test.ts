import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { expect, it, vi } from 'vitest';
import type { BackupRow, NewBackup, ServerRow } from '../../src/db/schema.js';
import { insertBackup } from '../../src/modules/backups/backups.repository.js';
import { importBackup } from '../../src/modules/backups/backups.service.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

/** One entry of a hand-built tar: lets the tests write entries no well-behaved tar tool would. */
interface TarEntry {
  name: string;
  content?: string;
  /** '0' file, '1' hard link, '2' symlink, '5' directory, '6' FIFO */
  type?: string;
  linkname?: string;
  mode?: number;
}

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

function tarHeader(entry: TarEntry, size: number): Buffer {
  const header = Buffer.alloc(512);
  header.write(entry.name, 0, 100, 'utf8');
  header.write(octal(entry.mode ?? (entry.type === '5' ? 0o755 : 0o644), 8), 100);
  header.write(octal(0, 8), 108);
  header.write(octal(0, 8), 116);
  header.write(octal(size, 12), 124);
  header.write(octal(Math.floor(Date.now() / 1000), 12), 136);
  header.write('        ', 148);
  header.write(entry.type ?? '0', 156);
  if (entry.linkname) header.write(entry.linkname, 157, 100, 'utf8');
  header.write('ustar\0', 257);
  header.write('00', 263);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  return header;
}

function tarball(entries: TarEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const content = Buffer.from(entry.content ?? '');
    blocks.push(tarHeader(entry, content.length));
    if (content.length > 0) {
      blocks.push(content, Buffer.alloc((512 - (content.length % 512)) % 512));
    }
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}

describeEachDatabase('restoring backups', (database) => {
  const h = useHarness(database);

  const base = (server: ServerRow) => `/api/client/servers/${server.uuid_short}/backups`;
  const restoreUrl = (server: ServerRow, backup: { uuid: string }) => `${base(server)}/${backup.uuid}/restore`;

  async function events(server: ServerRow) {
    const rows = await h.db.db.selectFrom('activity_logs').selectAll().where('server_id', '=', server.id).orderBy('id').execute();
    return rows.map((r) => ({
      event: r.event,
      actor_id: r.actor_id,
      ip: r.ip,
      properties: JSON.parse(r.properties) as Record<string, unknown>,
    }));
  }
  const restoreEvents = async (server: ServerRow) =>
    (await events(server)).filter((e) => e.event.startsWith('server:backup.restore'));

  async function statusOf(server: ServerRow) {
    const row = await h.db.db.selectFrom('servers').select('status').where('id', '=', server.id).executeTakeFirstOrThrow();
    return row.status;
  }

  function writeVolume(server: ServerRow, files: Record<string, string>) {
    const volume = h.daemon.volumeDir(server.uuid);
    for (const [name, content] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(volume, name)), { recursive: true });
      fs.writeFileSync(path.join(volume, name), content);
    }
  }

  /** The volume's tree: files by content, folders as "dir", links by target. */
  function snapshot(server: ServerRow): Record<string, string> {
    const root = h.daemon.volumeDir(server.uuid);
    const out: Record<string, string> = {};
    const walk = (rel: string) => {
      for (const entry of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
        const child = path.posix.join(rel, entry.name);
        if (entry.isSymbolicLink()) out[child] = `link:${fs.readlinkSync(path.join(root, child))}`;
        else if (entry.isDirectory()) {
          out[`${child}/`] = 'dir';
          walk(child);
        } else out[child] = fs.readFileSync(path.join(root, child), 'utf8');
      }
    };
    walk('');
    return out;
  }

  /** Everything under DATA_DIR except the SQLite file and logs: to prove a failed restore left nothing behind. */
  function dataTree(): string[] {
    const out: string[] = [];
    const walk = (rel: string) => {
      for (const entry of fs.readdirSync(path.join(h.dataDir, rel), { withFileTypes: true })) {
        const child = path.posix.join(rel, entry.name);
        if (rel === '' && ['logs', 'run'].includes(entry.name)) continue;
        out.push(child);
        if (entry.isDirectory() && !entry.isSymbolicLink()) walk(child);
      }
    };
    walk('');
    return out.sort();
  }

  async function backupViaApi(token: string, server: ServerRow, name = 'snapshot'): Promise<{ uuid: string }> {
    const res = await h.request(token, { method: 'POST', url: base(server), payload: { name } });
    expect(res.statusCode).toBe(200);
    await h.jobs.idle();
    const shown = await h.request(token, { method: 'GET', url: `${base(server)}/${res.json().attributes.uuid}` });
    expect(shown.json().attributes.is_successful).toBe(true);
    return res.json().attributes;
  }

  async function importTarball(server: ServerRow, bytes: Buffer, name = 'imported'): Promise<BackupRow> {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-import-')), 'archive.tar.gz');
    fs.writeFileSync(file, bytes);
    try {
      return await importBackup({ ...h.deps, daemon: h.daemon }, server, { file, name });
    } finally {
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
    }
  }

  async function insertRow(server: ServerRow, values: Partial<NewBackup>) {
    return insertBackup(h.db.db, {
      uuid: randomUUID(),
      server_id: server.id,
      name: 'row',
      ignored_files: '[]',
      checksum: `sha1:${'b'.repeat(40)}`,
      bytes: 1,
      is_successful: 1,
      is_locked: 0,
      created_at: h.clock.now(),
      completed_at: h.clock.now(),
      ...values,
    });
  }

  it('restores without truncate: backed-up files come back, newer files stay', async () => {
    const { owner, server } = await h.make.ownedServer();
    writeVolume(server, { 'a.txt': 'one', 'dir/b.txt': 'two' });
    const backup = await backupViaApi(owner.token, server, 'before');
    writeVolume(server, { 'a.txt': 'changed', 'new.txt': 'newer' });
    fs.rmSync(path.join(h.daemon.volumeDir(server.uuid), 'dir'), { recursive: true });

    const res = await h.request(owner.token, { method: 'POST', url: restoreUrl(server, backup), payload: { truncate: false } });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    await h.jobs.idle();

    expect(snapshot(server)).toEqual({ 'a.txt': 'one', 'dir/': 'dir', 'dir/b.txt': 'two', 'new.txt': 'newer' });
    expect(await statusOf(server)).toBeNull();
    expect(await restoreEvents(server)).toEqual([
      {
        event: 'server:backup.restore',
        actor_id: owner.user.id,
        ip: expect.any(String),
        properties: { name: 'before', truncate: false },
      },
      { event: 'server:backup.restore-complete', actor_id: null, ip: null, properties: { name: 'before' } },
    ]);
  });

  it('restores with truncate: the volume becomes exactly the backup', async () => {
    const { owner, server } = await h.make.ownedServer();
    writeVolume(server, { 'a.txt': 'one', 'dir/b.txt': 'two' });
    const backup = await backupViaApi(owner.token, server);
    writeVolume(server, { 'a.txt': 'changed', 'new.txt': 'newer', 'other/deep/c.txt': 'c' });

    const res = await h.request(owner.token, { method: 'POST', url: restoreUrl(server, backup), payload: { truncate: true } });
    expect(res.statusCode).toBe(204);
    await h.jobs.idle();

    expect(snapshot(server)).toEqual({ 'a.txt': 'one', 'dir/': 'dir', 'dir/b.txt': 'two' });
    expect(await statusOf(server)).toBeNull();
    expect((await restoreEvents(server)).map((e) => [e.event, e.properties])).toEqual([
      ['server:backup.restore', { name: 'snapshot', truncate: true }],
      ['server:backup.restore-complete', { name: 'snapshot' }],
    ]);
  });

  it('accepts every optional body form and rejects non-objects (400) and bad booleans (422) without writing anything', async () => {
    const { owner, server } = await h.make.ownedServer();
    writeVolume(server, { 'a.txt': 'one' });
    const backup = await backupViaApi(owner.token, server);
    const url = restoreUrl(server, backup);

    const accepted: [string, Parameters<typeof h.request>[1], boolean][] = [
      ['no body, JSON content type', { method: 'POST', url, headers: { 'content-type': 'application/json' } }, false],
      ['no body, no content type', { method: 'POST', url }, false],
      ['empty string body', { method: 'POST', url, payload: '', headers: { 'content-type': 'application/json' } }, false],
      ['whitespace body', { method: 'POST', url, payload: '  \n', headers: { 'content-type': 'application/json' } }, false],
      ['{}', { method: 'POST', url, payload: {} }, false],
      ['truncate null', { method: 'POST', url, payload: { truncate: null } }, false],
      ['truncate "1"', { method: 'POST', url, payload: { truncate: '1' } }, true],
      ['truncate "false"', { method: 'POST', url, payload: { truncate: 'false' } }, false],
      ['truncate 1', { method: 'POST', url, payload: { truncate: 1 } }, true],
      ['unknown members', { method: 'POST', url, payload: { truncate: true, extra: [1] } }, true],
    ];
    for (const [label, request, truncate] of accepted) {
      const res = await h.request(owner.token, request);
      expect(res.statusCode, label).toBe(204);
      await h.jobs.idle();
      const log = await restoreEvents(server);
      expect(log.at(-2), label).toMatchObject({ event: 'server:backup.restore', properties: { truncate } });
      expect(log.at(-1), label).toMatchObject({ event: 'server:backup.restore-complete' });
      expect(await statusOf(server)).toBeNull();
    }

    const before = (await events(server)).length;
    const rejected: [string, string, number, string][] = [
      ['[]', '[]', 400, 'BadRequestHttpException'],
      ['"x"', '"x"', 400, 'BadRequestHttpException'],
      ['null', 'null', 400, 'BadRequestHttpException'],
      ['7', '7', 400, 'BadRequestHttpException'],
      ['malformed', '{"truncate":', 400, 'BadRequestHttpException'],
      ['truncate maybe', '{"truncate":"maybe"}', 422, 'ValidationException'],
      ['truncate 2', '{"truncate":2}', 422, 'ValidationException'],
      ['truncate object', '{"truncate":{}}', 422, 'ValidationException'],
    ];
    for (const [label, payload, status, code] of rejected) {
      const res = await h.request(owner.token, { method: 'POST', url, payload, headers: { 'content-type': 'application/json' } });
      expect(res.statusCode, label).toBe(status);
      expect(res.json().errors[0].code, label).toBe(code);
      if (status === 422) expect(res.json().errors[0].meta).toEqual({ source_field: 'truncate', rule: 'boolean' });
    }
    const text = await h.request(owner.token, {
      method: 'POST',
      url,
      payload: 'truncate=1',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.statusCode).toBe(415);
    await h.jobs.idle();
    expect((await events(server)).length).toBe(before);
    expect(await statusOf(server)).toBeNull();
  });

  it('refuses (409) a failed or unfinished backup, and writes no restore entry', async () => {
    const { owner, server } = await h.make.ownedServer();
    const failed = await insertRow(server, { is_successful: 0, checksum: null });
    const running = await insertRow(server, { is_successful: 0, checksum: null, completed_at: null });
    for (const backup of [failed, running]) {
      const res = await h.request(owner.token, { method: 'POST', url: restoreUrl(server, backup), payload: {} });
      expect(res.statusCode).toBe(409);
      expect(res.json().errors[0].code).toBe('ConflictHttpException');
    }
    expect(await events(server)).toEqual([]);
    expect(await statusOf(server)).toBeNull();
  });

  it('refuses (409) while the server is not ready, and writes no restore entry', async () => {
    const { owner, server } = await h.make.ownedServer();
    const backup = await insertRow(server, {});
    for (const status of ['installing', 'install_failed', 'suspended', 'restoring_backup'] as const) {
      await h.make.setStatus(server, status);
      const res = await h.request(owner.token, { method: 'POST', url: restoreUrl(server, backup), payload: { truncate: true } });
      expect(res.statusCode, status).toBe(409);
      // The state check comes before the body.
      const bad = await h.request(owner.token, {
        method: 'POST',
        url: restoreUrl(server, backup),
        payload: '[]',
        headers: { 'content-type': 'application/json' },
      });
      expect(bad.statusCode, status).toBe(409);
      expect(await statusOf(server)).toBe(status);
    }
    expect(await events(server)).toEqual([]);
  });

  it('accepts exactly one of two concurrent restores', async () => {
    const { owner, server } = await h.make.ownedServer();
    writeVolume(server, { 'a.txt': 'one' });
    const first = await backupViaApi(owner.token, server, 'first');
    const second = await backupViaApi(owner.token, server, 'second');
    // The daemon's restore waits for a gate, so the accepted one is surely still running when the other is judged.
    const realRestore = h.daemon.restoreBackup.bind(h.daemon);
    for (const [a, b] of [
      [first, first],
      [first, second],
    ]) {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const spy = vi.spyOn(h.daemon, 'restoreBackup').mockImplementation(async (...args) => {
        await gate;
        return realRestore(...args);
      });
      try {
        const results = await Promise.all([
          h.request(owner.token, { method: 'POST', url: restoreUrl(server, a!), payload: { truncate: true } }),
          h.request(owner.token, { method: 'POST', url: restoreUrl(server, b!), payload: {} }),
        ]);
        expect(results.map((r) => r.statusCode).sort()).toEqual([204, 409]);
        expect(results.find((r) => r.statusCode === 409)!.json().errors[0].code).toBe('ConflictHttpException');
      } finally {
        release();
        await h.jobs.idle();
        spy.mockRestore();
      }
      expect(await statusOf(server)).toBeNull();
    }
    const log = (await restoreEvents(server)).map((e) => e.event);
    expect(log.filter((e) => e === 'server:backup.restore')).toHaveLength(2);
    expect(log.filter((e) => e === 'server:backup.restore-complete')).toHaveLength(2);
  });

  it('holds the server in restoring_backup until the daemon finishes: reads work, changes are 409', async () => {
    const { owner, server } = await h.make.ownedServer();
    const backup = await insertRow(server, { name: 'slow' });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const spy = vi.spyOn(h.daemon, 'restoreBackup').mockImplementationOnce(() => gate);
    try {
      expect((await h.request(owner.token, { method: 'POST', url: restoreUrl(server, backup) })).statusCode).toBe(204);
      expect(await statusOf(server)).toBe('restoring_backup');
      expect(spy).toHaveBeenCalledWith(
        expect.objectContaining({ uuid: server.uuid }),
        { uuid: backup.uuid, sha1: 'b'.repeat(40) },
        expect.objectContaining({ truncate: false, restoreId: expect.any(String) }),
      );
      expect((await h.request(owner.token, { method: 'GET', url: base(server) })).statusCode).toBe(200);
      expect((await h.request(owner.token, { method: 'GET', url: `${base(server)}/${backup.uuid}` })).statusCode).toBe(200);
      expect((await h.request(owner.token, { method: 'POST', url: base(server), payload: {} })).statusCode).toBe(409);
      expect((await h.request(owner.token, { method: 'DELETE', url: `${base(server)}/${backup.uuid}` })).statusCode).toBe(409);
      expect((await h.request(owner.token, { method: 'POST', url: restoreUrl(server, backup) })).statusCode).toBe(409);
      // docs/reference/backups-and-restores.md#durability: the backup being restored can be neither deleted (above) nor locked or unlocked.
      const lock = await h.request(owner.token, { method: 'POST', url: `${base(server)}/${backup.uuid}/lock` });
      expect(lock.statusCode).toBe(409);
      expect(lock.json().errors[0].code).toBe('ConflictHttpException');
      expect((await restoreEvents(server)).map((e) => e.event)).toEqual(['server:backup.restore']);
    } finally {
      release();
      await h.jobs.idle();
      spy.mockRestore();
    }
    expect(await statusOf(server)).toBeNull();
    expect((await restoreEvents(server)).map((e) => e.event)).toEqual([
      'server:backup.restore',
      'server:backup.restore-complete',
    ]);
  });

  it('leaves a suspension made during a restore in place', async () => {
    const { owner, server } = await h.make.ownedServer();
    const backup = await insertRow(server, {});
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const spy = vi.spyOn(h.daemon, 'restoreBackup').mockImplementationOnce(() => gate);
    try {
      expect((await h.request(owner.token, { method: 'POST', url: restoreUrl(server, backup) })).statusCode).toBe(204);
      await h.make.setStatus(server, 'suspended');
    } finally {
      release();
      await h.jobs.idle();
      spy.mockRestore();
    }
    expect(await statusOf(server)).toBe('suspended');
    expect((await restoreEvents(server)).at(-1)?.event).toBe('server:backup.restore-complete');
  });

  it('restores an imported archive with folders', async () => {
    const { owner, server } = await h.make.ownedServer();
    const backup = await importTarball(
      server,
      tarball([
        { name: 'config/', type: '5' },
        { name: 'config/app.yml', content: 'port: 1\n' },
        { name: 'empty/', type: '5' },
        { name: 'run.sh', content: '#!/bin/sh\n', mode: 0o755 },
      ]),
    );
    writeVolume(server, { 'old.txt': 'old' });
    expect(
      (await h.request(owner.token, { method: 'POST', url: restoreUrl(server, backup), payload: { truncate: true } })).statusCode,
    ).toBe(204);
    await h.jobs.idle();
    expect(snapshot(server)).toEqual({
      'config/': 'dir',
      'config/app.yml': 'port: 1\n',
      'empty/': 'dir',
      'run.sh': '#!/bin/sh\n',
    });
    expect(fs.statSync(path.join(h.daemon.volumeDir(server.uuid), 'run.sh')).mode & 0o777).toBe(0o755);
    expect((await restoreEvents(server)).at(-1)?.event).toBe('server:backup.restore-complete');
  });

  const outside = path.join(os.tmpdir(), `quetzal-evil-${randomUUID()}`);
  const hostile: [string, () => Buffer][] = [
    [
      'a ../ entry',
      () =>
        tarball([
          { name: 'ok.txt', content: 'fine' },
          { name: '../evil', content: 'pwned' },
        ]),
    ],
    ['a nested ../ entry', () => tarball([{ name: 'sub/../../evil', content: 'pwned' }])],
    ['an absolute path', () => tarball([{ name: outside, content: 'pwned' }])],
    [
      'a symlink out of the volume, then a file through it',
      () =>
        tarball([
          { name: 'link', type: '2', linkname: '../' },
          { name: 'link/evil', content: 'pwned' },
        ]),
    ],
    ['an absolute symlink', () => tarball([{ name: 'etc', type: '2', linkname: '/etc' }])],
    [
      'a hard link',
      () =>
        tarball([
          { name: 'a.txt', content: 'x' },
          { name: 'hard', type: '1', linkname: 'a.txt' },
        ]),
    ],
    ['a FIFO', () => tarball([{ name: 'pipe', type: '6' }])],
    [
      'a corrupt gzip stream',
      () => {
        const good = tarball([{ name: 'big.txt', content: 'y'.repeat(20_000) }]);
        return good.subarray(0, Math.floor(good.length / 2));
      },
    ],
    ['bytes that are not gzip at all', () => Buffer.from('this is not an archive\n'.repeat(50))],
  ];

  for (const [label, build] of hostile) {
    it(`fails the restore of an archive with ${label}: volume intact, nothing outside, server usable`, async () => {
      const { owner, server } = await h.make.ownedServer();
      writeVolume(server, { 'keep.txt': 'precious', 'dir/inner.txt': 'inner', 'ok.txt': 'original' });
      const backup = await importTarball(server, build(), 'hostile');
      const before = snapshot(server);
      const treeBefore = dataTree();

      const res = await h.request(owner.token, { method: 'POST', url: restoreUrl(server, backup), payload: { truncate: true } });
      expect(res.statusCode).toBe(204);
      await h.jobs.idle();

      expect(snapshot(server)).toEqual(before);
      expect(dataTree()).toEqual(treeBefore);
      expect(fs.existsSync(path.join(h.daemon.paths.volumes, 'evil'))).toBe(false);
      expect(fs.existsSync(path.join(h.dataDir, 'evil'))).toBe(false);
      expect(fs.existsSync(outside)).toBe(false);
      expect(await statusOf(server)).toBeNull();
      expect((await restoreEvents(server)).map((e) => [e.event, e.actor_id, e.properties])).toEqual([
        ['server:backup.restore', owner.user.id, { name: 'hostile', truncate: true }],
        ['server:backup.restore-failed', null, { name: 'hostile' }],
      ]);
      // Usable afterwards: a good backup restores.
      const good = await importTarball(server, tarball([{ name: 'fresh.txt', content: 'new' }]), 'good');
      expect((await h.request(owner.token, { method: 'POST', url: restoreUrl(server, good) })).statusCode).toBe(204);
      await h.jobs.idle();
      expect(snapshot(server)['fresh.txt']).toBe('new');
    });
  }

  it('fails on a checksum mismatch (archive replaced after import), volume intact', async () => {
    const { owner, server } = await h.make.ownedServer();
    writeVolume(server, { 'keep.txt': 'precious' });
    const backup = await importTarball(server, tarball([{ name: 'genuine.txt', content: 'genuine' }]), 'tampered');
    fs.writeFileSync(h.daemon.backupPath(backup.uuid), tarball([{ name: 'forged.txt', content: 'forged' }]));
    const before = snapshot(server);
    expect(
      (await h.request(owner.token, { method: 'POST', url: restoreUrl(server, backup), payload: { truncate: true } })).statusCode,
    ).toBe(204);
    await h.jobs.idle();
    expect(snapshot(server)).toEqual(before);
    expect(await statusOf(server)).toBeNull();
    expect((await restoreEvents(server)).at(-1)).toMatchObject({
      event: 'server:backup.restore-failed',
      properties: { name: 'tampered' },
    });
  });

  it('fails when the archive is missing, with every file intact even with truncate', async () => {
    const { owner, server } = await h.make.ownedServer();
    writeVolume(server, { 'keep.txt': 'precious' });
    const backup = await backupViaApi(owner.token, server, 'vanished');
    fs.rmSync(h.daemon.backupPath(backup.uuid));
    writeVolume(server, { 'later.txt': 'later' });
    const before = snapshot(server);
    expect(
      (await h.request(owner.token, { method: 'POST', url: restoreUrl(server, backup), payload: { truncate: true } })).statusCode,
    ).toBe(204);
    await h.jobs.idle();
    expect(snapshot(server)).toEqual(before);
    expect(await statusOf(server)).toBeNull();
    expect((await restoreEvents(server)).at(-1)).toMatchObject({ event: 'server:backup.restore-failed', actor_id: null });
  });

  it('needs backup.restore (403 even with an invalid body); 404 for foreign backups', async () => {
    const { owner, server } = await h.make.ownedServer();
    writeVolume(server, { 'a.txt': 'one' });
    const backup = await backupViaApi(owner.token, server);
    const without = await h.make.subuser(server, ['backup.read', 'backup.create', 'backup.delete', 'backup.download']);
    for (const payload of ['{}', '{"truncate":"maybe"}', '[]']) {
      const res = await h.request(without.token, {
        method: 'POST',
        url: restoreUrl(server, backup),
        payload,
        headers: { 'content-type': 'application/json' },
      });
      expect(res.statusCode, payload).toBe(403);
    }
    const holder = await h.make.subuser(server, ['backup.restore']);
    const ok = await h.request(holder.token, { method: 'POST', url: restoreUrl(server, backup), payload: {} });
    expect(ok.statusCode).toBe(204);
    await h.jobs.idle();
    expect((await restoreEvents(server))[0]).toMatchObject({ event: 'server:backup.restore', actor_id: holder.user.id });

    const other = await h.make.server(owner.user);
    const foreign = await h.request(owner.token, { method: 'POST', url: restoreUrl(other, backup), payload: {} });
    expect(foreign.statusCode).toBe(404);
    expect(await events(other)).toEqual([]);
    expect(await statusOf(other)).toBeNull();
  });

  it('one file operation at a time (docs/reference/backups-and-restores.md#durability): a restore while a backup is written is a 409, and the backup completes with every file', async () => {
    const { owner, server } = await h.make.ownedServer();
    const files: Record<string, string> = {};
    for (let i = 0; i < 300; i += 1) files[`d${i % 7}/f${i}.txt`] = `content ${i} `.repeat(50);
    writeVolume(server, { 'old.txt': 'older' });
    const older = await backupViaApi(owner.token, server, 'older');
    writeVolume(server, files);
    const expected = snapshot(server);

    const started = await h.request(owner.token, { method: 'POST', url: base(server), payload: { name: 'newer' } });
    expect(started.statusCode).toBe(200);
    // At once, while the archive is being written.
    const refused = await h.request(owner.token, { method: 'POST', url: restoreUrl(server, older), payload: { truncate: true } });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().errors[0].code).toBe('ConflictHttpException');
    await h.jobs.idle();

    const newer = await h.request(owner.token, { method: 'GET', url: `${base(server)}/${started.json().attributes.uuid}` });
    expect(newer.json().attributes).toMatchObject({ is_successful: true });
    expect(snapshot(server)).toEqual(expected);
    expect(await statusOf(server)).toBeNull();
    expect(await restoreEvents(server)).toEqual([]);
    // The backup holds every file: restoring it with truncate onto an emptied volume gives the same tree.
    fs.rmSync(h.daemon.volumeDir(server.uuid), { recursive: true });
    fs.mkdirSync(h.daemon.volumeDir(server.uuid));
    const res = await h.request(owner.token, {
      method: 'POST',
      url: restoreUrl(server, started.json().attributes),
      payload: { truncate: true },
    });
    expect(res.statusCode).toBe(204);
    await h.jobs.idle();
    expect(snapshot(server)).toEqual(expected);
  });
});
