import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { InjectOptions } from 'fastify';
import { afterAll, expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { fileTools } from './files-helpers.js';

/**
 * Who may call each file route (docs/reference/authentication.md, docs/reference/files-and-sftp.md), and what a hostile path does:
 * `..` out of the volume, an absolute host path (it means the volume's own
 * root), and a link whose target is outside. Every refusal is a 4xx in SPEC
 * 1.2's shape and changes nothing, on disk or in the activity log.
 */
describeEachDatabase('file routes: permissions and hostile paths', (database) => {
  const h = useHarness(database);
  const f = fileTools(h);
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-outside-'));
  fs.writeFileSync(path.join(outside, 'secret'), 'TOP-SECRET-CONTENT');
  afterAll(() => fs.rmSync(outside, { recursive: true, force: true }));

  /** Each route with the permission it needs and a request naming `p` where it takes a path. */
  const ROUTES: { name: string; permission: string; request: (s: ServerRow, p: string) => InjectOptions; ok: number }[] = [
    {
      name: 'list',
      permission: 'file.read',
      ok: 200,
      request: (s, p) => ({ method: 'GET', url: f.url(s, `list?directory=${encodeURIComponent(p)}`) }),
    },
    {
      name: 'contents',
      permission: 'file.read-content',
      ok: 200,
      request: (s, p) => ({ method: 'GET', url: f.url(s, `contents?file=${encodeURIComponent(p)}`) }),
    },
    {
      name: 'download',
      permission: 'file.read-content',
      ok: 200,
      request: (s, p) => ({ method: 'GET', url: f.url(s, `download?file=${encodeURIComponent(p)}`) }),
    },
    { name: 'upload', permission: 'file.create', ok: 200, request: (s) => ({ method: 'GET', url: f.url(s, 'upload') }) },
    {
      name: 'write',
      permission: 'file.create',
      ok: 204,
      request: (s, p) => ({ method: 'POST', url: f.url(s, `write?file=${encodeURIComponent(p)}`), payload: 'x' }),
    },
    {
      name: 'rename',
      permission: 'file.update',
      ok: 204,
      request: (s, p) => ({
        method: 'PUT',
        url: f.url(s, 'rename'),
        payload: { root: '/', files: [{ from: p, to: `${p}.moved` }] },
      }),
    },
    {
      name: 'copy',
      permission: 'file.create',
      ok: 204,
      request: (s, p) => ({ method: 'POST', url: f.url(s, 'copy'), payload: { location: p } }),
    },
    {
      name: 'delete',
      permission: 'file.delete',
      ok: 204,
      request: (s, p) => ({ method: 'POST', url: f.url(s, 'delete'), payload: { root: '/', files: [p] } }),
    },
    {
      name: 'create-folder',
      permission: 'file.create',
      ok: 204,
      request: (s, p) => ({ method: 'POST', url: f.url(s, 'create-folder'), payload: { root: '/', name: `${p}.d` } }),
    },
    {
      name: 'chmod',
      permission: 'file.update',
      ok: 204,
      request: (s, p) => ({ method: 'POST', url: f.url(s, 'chmod'), payload: { root: '/', files: [{ file: p, mode: '600' }] } }),
    },
    {
      name: 'compress',
      permission: 'file.archive',
      ok: 200,
      request: (s, p) => ({ method: 'POST', url: f.url(s, 'compress'), payload: { root: '/', files: [p] } }),
    },
    {
      name: 'decompress',
      permission: 'file.archive',
      ok: 204,
      request: (s, p) => ({ method: 'POST', url: f.url(s, 'decompress'), payload: { root: '/', file: p } }),
    },
  ];

  async function serverWithFiles() {
    const made = await h.make.ownedServer();
    f.put(made.server, { 'a.txt': 'a', 'dir/b.txt': 'b' });
    return made;
  }

  it('a subuser without the permission gets 403; with it, the route works', async () => {
    for (const route of ROUTES) {
      const { server } = await serverWithFiles();
      const target = route.name === 'list' ? '/dir' : route.name === 'decompress' ? 'x.tar.gz' : 'a.txt';
      if (route.name === 'decompress') {
        const { owner } = { owner: await h.make.subuser(server, ['file.archive']) };
        const packed = await h.request(owner.token, {
          method: 'POST',
          url: f.url(server, 'compress'),
          payload: { files: ['dir'] },
        });
        fs.renameSync(path.join(f.volume(server), packed.json().attributes.name), path.join(f.volume(server), 'x.tar.gz'));
      }
      const others = [
        'file.read',
        'file.read-content',
        'file.create',
        'file.update',
        'file.delete',
        'file.archive',
        'backup.download',
      ].filter((p) => p !== route.permission && !(route.name === 'write' && p === 'file.update'));
      const without = await h.make.subuser(server, [...others, 'websocket.connect']);
      const before = f.tree(server);
      const refused = await h.request(without.token, route.request(server, target));
      expect(refused.statusCode, route.name).toBe(403);
      expect(refused.json().errors[0]).toMatchObject({ code: 'AccessDeniedHttpException', status: '403' });
      expect(f.tree(server), route.name).toEqual(before);

      const holder = await h.make.subuser(server, [route.permission]);
      const allowed = await h.request(holder.token, route.request(server, target));
      expect(allowed.statusCode, `${route.name}: ${allowed.body}`).toBe(route.ok);
    }
  });

  it('write is allowed by file.update alone, as Pterodactyl allows it', async () => {
    const { server } = await serverWithFiles();
    const updater = await h.make.subuser(server, ['file.update']);
    const res = await h.request(updater.token, { method: 'POST', url: f.url(server, 'write?file=a.txt'), payload: 'new' });
    expect(res.statusCode).toBe(204);
    expect(f.read(server, 'a.txt')).toBe('new');
  });

  it('`..` out of the volume is a 400 on every route, and changes nothing', async () => {
    for (const route of ROUTES.filter((r) => r.name !== 'upload')) {
      const { owner, server } = await serverWithFiles();
      for (const hostile of ['../../../etc/passwd', '/../secret', 'dir/../../x']) {
        const before = f.tree(server);
        const res = await h.request(owner.token, route.request(server, hostile));
        if (route.name === 'download') {
          // The link is issued for the name; it is the download that refuses it (below, signed-urls.test.ts).
          expect(res.statusCode).toBe(200);
          continue;
        }
        expect(res.statusCode, `${route.name} ${hostile}: ${res.body}`).toBe(400);
        expect(res.json().errors[0].status).toBe('400');
        expect(f.tree(server)).toEqual(before);
      }
      expect((await f.events(server)).filter((e) => e.event !== 'server:file.download')).toEqual([]);
    }
    expect(fs.readdirSync(outside)).toEqual(['secret']);
  });

  it('an absolute host path means the volume root: /etc/passwd of the host is never read', async () => {
    const { owner, server } = await serverWithFiles();
    const read = await h.request(owner.token, {
      method: 'GET',
      url: f.url(server, `contents?file=${encodeURIComponent(path.join(outside, 'secret'))}`),
    });
    expect(read.statusCode).toBe(404);
    const passwd = await h.request(owner.token, { method: 'GET', url: f.url(server, 'contents?file=%2Fetc%2Fpasswd') });
    expect(passwd.statusCode).toBe(404);
    const write = await h.request(owner.token, {
      method: 'POST',
      url: f.url(server, `write?file=${encodeURIComponent(path.join(outside, 'new'))}`),
      payload: 'x',
    });
    expect(write.statusCode).toBe(204);
    expect(f.read(server, path.join(outside, 'new'))).toBe('x');
    expect(fs.readdirSync(outside)).toEqual(['secret']);
  });

  it('a link out of the volume is never followed: every route refuses it with a 4xx and changes nothing outside', async () => {
    for (const route of ROUTES.filter((r) => r.name !== 'upload' && r.name !== 'download')) {
      const { owner, server } = await serverWithFiles();
      fs.symlinkSync(outside, path.join(f.volume(server), 'out'));
      fs.symlinkSync(path.join(outside, 'secret'), path.join(f.volume(server), 'secret-link'));
      for (const hostile of ['out/secret', 'out/new']) {
        const res = await h.request(owner.token, route.request(server, hostile));
        expect(res.statusCode, `${route.name} ${hostile}: ${res.body}`).toBeGreaterThanOrEqual(400);
        expect(res.statusCode, `${route.name} ${hostile}`).toBeLessThan(500);
      }
      if (route.name === 'contents') {
        const res = await h.request(owner.token, route.request(server, 'secret-link'));
        expect(res.statusCode).toBeGreaterThanOrEqual(400);
        expect(res.body).not.toContain('TOP-SECRET-CONTENT');
      }
      expect(fs.readdirSync(outside).sort(), route.name).toEqual(['secret']);
      expect(fs.readFileSync(path.join(outside, 'secret'), 'utf8')).toBe('TOP-SECRET-CONTENT');
      expect((fs.statSync(path.join(outside, 'secret')).mode & 0o777).toString(8)).not.toBe('600');
    }
  });
});
