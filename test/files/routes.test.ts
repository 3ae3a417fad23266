import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { fileTools } from './files-helpers.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;

/** Every file route's success, shape and activity entry (docs/reference/files-and-sftp.md), on each database. */
describeEachDatabase('file routes', (database) => {
  const h = useHarness(database);
  const f = fileTools(h);

  it('lists a folder: folders first, then files, by name, in file_object shape', async () => {
    const { owner, server } = await h.make.ownedServer();
    f.put(server, { 'b.txt': 'bee', 'a.jar': 'x', 'zeta/x': '', 'alpha/y': '', 'server.properties': 'motd=hi\n' });
    fs.symlinkSync('b.txt', path.join(f.volume(server), 'link'));
    fs.chmodSync(path.join(f.volume(server), 'b.txt'), 0o640);
    const res = await h.request(owner.token, { method: 'GET', url: f.url(server, 'list?directory=%2F') });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.object).toBe('list');
    expect(body.data.map((d: { attributes: { name: string } }) => d.attributes.name)).toEqual([
      'alpha',
      'zeta',
      'a.jar',
      'b.txt',
      'link',
      'server.properties',
    ]);
    const byName = Object.fromEntries(body.data.map((d: { attributes: { name: string } }) => [d.attributes.name, d]));
    expect(byName['b.txt']).toEqual({
      object: 'file_object',
      attributes: {
        name: 'b.txt',
        mode: '-rw-r-----',
        mode_bits: '640',
        size: 3,
        is_file: true,
        is_symlink: false,
        mimetype: 'text/plain; charset=utf-8',
        created_at: expect.stringMatching(ISO),
        modified_at: expect.stringMatching(ISO),
      },
    });
    expect(byName.alpha.attributes).toMatchObject({
      mode: expect.stringMatching(/^d/),
      is_file: false,
      mimetype: 'inode/directory',
    });
    expect(byName.link.attributes).toMatchObject({ mode: 'lrwxrwxrwx', is_symlink: true, mimetype: 'inode/symlink' });
    expect(byName['a.jar'].attributes.mimetype).toBe('application/java-archive');

    const sub = await h.request(owner.token, { method: 'GET', url: f.url(server, 'list?directory=alpha') });
    expect(sub.json().data.map((d: { attributes: { name: string } }) => d.attributes.name)).toEqual(['y']);
    const none = await h.request(owner.token, { method: 'GET', url: f.url(server, 'list') });
    expect(none.statusCode).toBe(200);
    expect(none.json().data).toHaveLength(6);
    const missing = await h.request(owner.token, { method: 'GET', url: f.url(server, 'list?directory=nope') });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().errors[0]).toMatchObject({ status: '404' });
  });

  it('lists a folder of 100,000 entries in full', async () => {
    const { owner, server } = await h.make.ownedServer();
    const dir = path.join(f.volume(server), 'many');
    fs.mkdirSync(dir);
    for (let i = 0; i < 100_000; i++) fs.writeFileSync(path.join(dir, `f${i}`), '');
    const res = await h.request(owner.token, { method: 'GET', url: f.url(server, 'list?directory=many') });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toHaveLength(100_000);
  }, 120_000);

  it('reads contents as raw bytes, refuses over FILE_EDIT_MAX_MB with a 400, logs server:file.read', async () => {
    const { owner, server } = await h.make.ownedServer();
    f.put(server, { 'cfg/a.yml': 'key: value\n', big: Buffer.alloc(4 * 1024 * 1024 + 1, 97) });
    const res = await h.request(owner.token, { method: 'GET', url: f.url(server, 'contents?file=%2Fcfg%2Fa.yml') });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('key: value\n');
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const big = await h.request(owner.token, { method: 'GET', url: f.url(server, 'contents?file=big') });
    expect(big.statusCode).toBe(400);
    expect(big.json().errors[0].status).toBe('400');
    const folder = await h.request(owner.token, { method: 'GET', url: f.url(server, 'contents?file=cfg') });
    expect(folder.statusCode).toBe(400);
    const missing = await h.request(owner.token, { method: 'GET', url: f.url(server, 'contents') });
    expect(missing.statusCode).toBe(422);
    expect(missing.json().errors[0].meta).toEqual({ source_field: 'file', rule: 'required' });
    expect(await f.events(server)).toEqual([{ event: 'server:file.read', properties: { file: '/cfg/a.yml' } }]);
  });

  it('writes a raw body of any content type, making missing folders, and logs server:file.write', async () => {
    const { owner, server } = await h.make.ownedServer();
    for (const [type, name] of [
      ['text/plain', 'a.txt'],
      ['application/json', 'b.json'],
      ['application/octet-stream', 'c.bin'],
      ['', 'd'],
      ['application/x-www-form-urlencoded', 'e'],
    ] as const) {
      const res = await h.request(owner.token, {
        method: 'POST',
        url: f.url(server, `write?file=${encodeURIComponent(`/deep/er/${name}`)}`),
        payload: `{"content of": "${name}"}`,
        headers: type ? { 'content-type': type } : {},
      });
      expect(res.statusCode, type).toBe(204);
      expect(f.read(server, `deep/er/${name}`)).toBe(`{"content of": "${name}"}`);
    }
    const empty = await h.request(owner.token, { method: 'POST', url: f.url(server, 'write?file=empty') });
    expect(empty.statusCode).toBe(204);
    expect(f.read(server, 'empty')).toBe('');
    const replaced = await h.request(owner.token, { method: 'POST', url: f.url(server, 'write?file=empty'), payload: 'now' });
    expect(replaced.statusCode).toBe(204);
    expect(f.read(server, 'empty')).toBe('now');
    const events = await f.events(server);
    expect(events).toHaveLength(7);
    expect(events[0]).toEqual({ event: 'server:file.write', properties: { file: '/deep/er/a.txt' } });
  });

  it('renames and moves, logging server:file.rename with the directory and pairs', async () => {
    const { owner, server } = await h.make.ownedServer();
    f.put(server, { 'd/a.txt': 'a', 'd/b.txt': 'b', 'e/keep': '' });
    const files = [
      { from: 'a.txt', to: 'a2.txt' },
      { from: 'b.txt', to: '../e/b.txt' },
    ];
    const res = await h.request(owner.token, { method: 'PUT', url: f.url(server, 'rename'), payload: { root: '/d', files } });
    expect(res.statusCode).toBe(204);
    expect(f.read(server, 'd/a2.txt')).toBe('a');
    expect(f.read(server, 'e/b.txt')).toBe('b');
    expect(await f.events(server)).toEqual([{ event: 'server:file.rename', properties: { directory: '/d', files } }]);
    const taken = await h.request(owner.token, {
      method: 'PUT',
      url: f.url(server, 'rename'),
      payload: { root: '/', files: [{ from: 'd/a2.txt', to: 'e/b.txt' }] },
    });
    expect(taken.statusCode).toBe(409);
    expect(f.read(server, 'e/b.txt')).toBe('b');
    // A refused pair refuses the request: the pairs before it do not move either.
    for (const files of [
      [
        { from: 'd/a2.txt', to: 'd/a3.txt' },
        { from: 'd/missing', to: 'd/x' },
      ],
      [
        { from: 'd/a2.txt', to: 'd/a3.txt' },
        { from: 'e/keep', to: 'e/b.txt' },
      ],
      [
        { from: 'd/a2.txt', to: 'd/same' },
        { from: 'e/keep', to: 'd/same' },
      ],
    ]) {
      const half = await h.request(owner.token, { method: 'PUT', url: f.url(server, 'rename'), payload: { files } });
      expect(half.statusCode).toBeGreaterThanOrEqual(400);
      expect(half.statusCode).toBeLessThan(500);
      expect(f.tree(server)).toEqual(['d/', 'd/a2.txt', 'e/', 'e/b.txt', 'e/keep']);
    }
    const invalid = await h.request(owner.token, {
      method: 'PUT',
      url: f.url(server, 'rename'),
      payload: { files: [{ from: 'x' }] },
    });
    expect(invalid.statusCode).toBe(422);
    expect(invalid.json().errors[0].meta).toEqual({ source_field: 'files.0.to', rule: 'required' });
  });

  it('copies beside the file with Pterodactyl naming and logs server:file.copy', async () => {
    const { owner, server } = await h.make.ownedServer();
    f.put(server, { 'cfg/a.txt': 'a' });
    for (let i = 0; i < 2; i++) {
      const res = await h.request(owner.token, {
        method: 'POST',
        url: f.url(server, 'copy'),
        payload: { location: '/cfg/a.txt' },
      });
      expect(res.statusCode).toBe(204);
    }
    expect(f.tree(server)).toEqual(['cfg/', 'cfg/a copy 1.txt', 'cfg/a copy.txt', 'cfg/a.txt']);
    expect((await f.events(server)).map((e) => e.event)).toEqual(['server:file.copy', 'server:file.copy']);
    expect((await f.events(server))[0]!.properties).toEqual({ file: '/cfg/a.txt' });
  });

  it('deletes entries of root and logs server:file.delete', async () => {
    const { owner, server } = await h.make.ownedServer();
    f.put(server, { 'd/a': '', 'd/sub/b': '', 'd/keep': '' });
    const res = await h.request(owner.token, {
      method: 'POST',
      url: f.url(server, 'delete'),
      payload: { root: '/d', files: ['a', 'sub', 'absent'] },
    });
    expect(res.statusCode, res.body).toBe(204);
    expect(f.tree(server)).toEqual(['d/', 'd/keep']);
    expect(await f.events(server)).toEqual([
      { event: 'server:file.delete', properties: { directory: '/d', files: ['a', 'sub', 'absent'] } },
    ]);
    const empty = await h.request(owner.token, {
      method: 'POST',
      url: f.url(server, 'delete'),
      payload: { root: '/', files: [] },
    });
    expect(empty.statusCode).toBe(422);
  });

  it('creates a folder and logs server:file.create-directory; an existing name is a 409', async () => {
    const { owner, server } = await h.make.ownedServer();
    const res = await h.request(owner.token, {
      method: 'POST',
      url: f.url(server, 'create-folder'),
      payload: { root: '/', name: 'plugins' },
    });
    expect(res.statusCode).toBe(204);
    const nested = await h.request(owner.token, {
      method: 'POST',
      url: f.url(server, 'create-folder'),
      payload: { root: '/plugins', name: 'x' },
    });
    expect(nested.statusCode).toBe(204);
    expect(f.tree(server)).toEqual(['plugins/', 'plugins/x/']);
    const again = await h.request(owner.token, {
      method: 'POST',
      url: f.url(server, 'create-folder'),
      payload: { name: 'plugins' },
    });
    expect(again.statusCode).toBe(409);
    expect(await f.events(server)).toEqual([
      { event: 'server:file.create-directory', properties: { directory: '/', name: 'plugins' } },
      { event: 'server:file.create-directory', properties: { directory: '/plugins', name: 'x' } },
    ]);
  });

  it('chmods with octal strings or numbers; setuid, setgid, sticky and non-octal modes are a 422 that changes nothing', async () => {
    const { owner, server } = await h.make.ownedServer();
    f.put(server, { 'a.sh': '', 'b.sh': '' });
    const mode = (name: string) => (fs.statSync(path.join(f.volume(server), name)).mode & 0o7777).toString(8);
    const res = await h.request(owner.token, {
      method: 'POST',
      url: f.url(server, 'chmod'),
      payload: {
        root: '/',
        files: [
          { file: 'a.sh', mode: '755' },
          { file: 'b.sh', mode: 600 },
        ],
      },
    });
    expect(res.statusCode).toBe(204);
    expect([mode('a.sh'), mode('b.sh')]).toEqual(['755', '600']);
    for (const bad of ['4755', '2755', '1777', '789', 'rwx', 999]) {
      const refused = await h.request(owner.token, {
        method: 'POST',
        url: f.url(server, 'chmod'),
        payload: {
          root: '/',
          files: [
            { file: 'b.sh', mode: '644' },
            { file: 'a.sh', mode: bad },
          ],
        },
      });
      expect(refused.statusCode, String(bad)).toBe(422);
      expect(refused.json().errors[0].meta.source_field).toBe('files.1.mode');
    }
    expect([mode('a.sh'), mode('b.sh')]).toEqual(['755', '600']);
    const missing = await h.request(owner.token, {
      method: 'POST',
      url: f.url(server, 'chmod'),
      payload: {
        files: [
          { file: 'a.sh', mode: '700' },
          { file: 'absent', mode: '700' },
        ],
      },
    });
    expect(missing.statusCode).toBe(404);
    expect(mode('a.sh')).toBe('755');
    expect(await f.events(server)).toEqual([
      {
        event: 'server:file.chmod',
        properties: {
          directory: '/',
          files: [
            { file: 'a.sh', mode: '755' },
            { file: 'b.sh', mode: '600' },
          ],
        },
      },
    ]);
  });

  it('compresses into a .tar.gz answering its file_object, and decompresses it back', async () => {
    const { owner, server } = await h.make.ownedServer();
    f.put(server, { 'w/world/level.dat': 'level', 'w/config.yml': 'a: 1\n' });
    const res = await h.request(owner.token, {
      method: 'POST',
      url: f.url(server, 'compress'),
      payload: { root: '/w', files: ['world', 'config.yml'] },
    });
    expect(res.statusCode).toBe(200);
    const archive = res.json();
    expect(archive.object).toBe('file_object');
    expect(archive.attributes).toMatchObject({
      name: expect.stringMatching(/\.tar\.gz$/),
      is_file: true,
      mimetype: 'application/gzip',
    });
    expect(f.exists(server, `w/${archive.attributes.name}`)).toBe(true);

    fs.mkdirSync(path.join(f.volume(server), 'out'));
    fs.renameSync(path.join(f.volume(server), 'w', archive.attributes.name), path.join(f.volume(server), 'out', 'a.tar.gz'));
    const un = await h.request(owner.token, {
      method: 'POST',
      url: f.url(server, 'decompress'),
      payload: { root: '/out', file: 'a.tar.gz' },
    });
    expect(un.statusCode).toBe(204);
    expect(f.read(server, 'out/world/level.dat')).toBe('level');
    expect(f.read(server, 'out/config.yml')).toBe('a: 1\n');
    const events = await f.events(server);
    expect(events.map((e) => e.event)).toEqual(['server:file.compress', 'server:file.decompress']);
    expect(events[0]!.properties).toMatchObject({ directory: '/w', files: ['world', 'config.yml'] });
    expect(events[1]!.properties).toEqual({ directory: '/out', files: 'a.tar.gz' });

    f.put(server, { 'out/not.zip': 'not an archive' });
    const bad = await h.request(owner.token, {
      method: 'POST',
      url: f.url(server, 'decompress'),
      payload: { root: '/out', file: 'not.zip' },
    });
    expect(bad.statusCode).toBe(400);
  });

  it('refuses changes while a backup is written or a restore runs (409, nothing changed)', async () => {
    const { owner, server } = await h.make.ownedServer();
    f.put(server, { a: 'a' });
    await h.make.setStatus(server, 'restoring_backup');
    const res = await h.request(owner.token, { method: 'POST', url: f.url(server, 'write?file=a'), payload: 'b' });
    expect(res.statusCode).toBe(409);
    const del = await h.request(owner.token, { method: 'POST', url: f.url(server, 'delete'), payload: { files: ['a'] } });
    expect(del.statusCode).toBe(409);
    expect(f.read(server, 'a')).toBe('a');
    expect(await f.events(server)).toEqual([]);
  });

  it("file events list with Pterodactyl's properties and no additional metadata", async () => {
    const { owner, server } = await h.make.ownedServer();
    await h.request(owner.token, { method: 'POST', url: f.url(server, 'write?file=a.txt'), payload: 'a' });
    await h.request(owner.token, {
      method: 'PUT',
      url: f.url(server, 'rename'),
      payload: { files: [{ from: 'a.txt', to: 'b.txt' }] },
    });
    await h.request(owner.token, {
      method: 'POST',
      url: f.url(server, 'chmod'),
      payload: { files: [{ file: 'b.txt', mode: '600' }] },
    });
    const res = await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}/activity` });
    expect(res.statusCode).toBe(200);
    const listed = res
      .json()
      .data.map((d: { attributes: { event: string; has_additional_metadata: boolean } }) => [
        d.attributes.event,
        d.attributes.has_additional_metadata,
      ]);
    expect(listed).toEqual([
      ['server:file.chmod', false],
      ['server:file.rename', false],
      ['server:file.write', false],
    ]);
  });

  it('answers 405 for a known file path with another method, and documents the routes in OpenAPI', async () => {
    const { owner, server } = await h.make.ownedServer();
    for (const [method, rest] of [
      ['GET', 'write?file=a'],
      ['POST', 'list'],
      ['GET', 'rename'],
    ] as const) {
      const res = await h.request(owner.token, { method, url: f.url(server, rest) });
      expect(res.statusCode, rest).toBe(405);
    }
    const doc = (await h.request(owner.token, { method: 'GET', url: '/api/client/openapi.json' })).json();
    for (const route of [
      'list',
      'contents',
      'download',
      'upload',
      'write',
      'rename',
      'copy',
      'compress',
      'decompress',
      'delete',
      'create-folder',
      'chmod',
      'pull',
    ]) {
      expect(Object.keys(doc.paths), route).toContain(`/api/client/servers/{server}/files/${route}`);
    }
    expect(Object.keys(doc.paths)).toContain('/api/client/servers/{server}/backups/{backup}/download');
  });
});
