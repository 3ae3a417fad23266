import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { SignJWT, decodeJwt } from 'jose';
import { expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { signedUrlKey } from '../../src/modules/files/files.signed-urls.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { fileTools, localPart, multipartBody } from './files-helpers.js';

/**
 * Signed URLs (docs/reference/files-and-sftp.md): downloads of files and backups, uploads. A token of
 * 15 minutes bound to its server, user and purpose, checked again at use.
 */
describeEachDatabase('file transfers', (database) => {
  const h = useHarness(database);
  const f = fileTools(h);

  async function downloadUrl(token: string, server: ServerRow, file: string) {
    const res = await h.request(token, { method: 'GET', url: f.url(server, `download?file=${encodeURIComponent(file)}`) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ object: 'signed_url', attributes: { url: expect.any(String) } });
    return res.json().attributes.url as string;
  }

  it('download: an APP_URL-based link that streams the file as an attachment; logged server:file.download', async () => {
    const { owner, server } = await h.make.ownedServer();
    const bytes = Buffer.from([...Array(70_000).keys()].map((i) => i % 251));
    f.put(server, { 'logs/latest.log': bytes });
    const url = await downloadUrl(owner.token, server, '/logs/latest.log');
    expect(url).toMatch(/^http:\/\/quetzal\.test\/download\/file\?token=[\w-]+\.[\w-]+\.[\w-]+$/);
    const res = await h.app.inject({ method: 'GET', url: localPart(url) });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(bytes)).toBe(true);
    expect(res.headers['content-disposition']).toBe(`attachment; filename="latest.log"; filename*=UTF-8''latest.log`);
    expect(res.headers['content-type']).toBe('application/octet-stream');
    expect(Number(res.headers['content-length'])).toBe(bytes.length);
    expect(await f.events(server)).toEqual([{ event: 'server:file.download', properties: { file: '/logs/latest.log' } }]);
  });

  it('download: a hostile or missing file is refused when the link is used (4xx, docs/reference/api.md#errors body)', async () => {
    const { owner, server } = await h.make.ownedServer();
    fs.symlinkSync('/etc/passwd', path.join(f.volume(server), 'passwd'));
    for (const [file, status] of [
      ['../../etc/passwd', 400],
      ['passwd', 400],
      ['missing', 404],
    ] as const) {
      const res = await h.app.inject({ method: 'GET', url: localPart(await downloadUrl(owner.token, server, file)) });
      expect(res.statusCode, file).toBe(status);
      expect(res.json().errors[0].status).toBe(String(status));
    }
  });

  it('a link lapses after 15 minutes: 401', async () => {
    const { owner, server } = await h.make.ownedServer();
    f.put(server, { a: 'a' });
    const url = await downloadUrl(owner.token, server, 'a');
    expect(
      decodeJwt(new URL(url).searchParams.get('token')!).exp! - decodeJwt(new URL(url).searchParams.get('token')!).iat!,
    ).toBe(900);
    h.clock.advance(14 * 60 * 1000);
    expect((await h.app.inject({ method: 'GET', url: localPart(url) })).statusCode).toBe(200);
    h.clock.advance(61 * 1000);
    const late = await h.app.inject({ method: 'GET', url: localPart(url) });
    expect(late.statusCode).toBe(401);
    expect(late.json()).toEqual({
      errors: [{ code: 'AuthenticationException', status: '401', detail: 'This link is invalid or has expired.' }],
    });
  });

  it('a token cannot be moved to another server, purpose or signer; none at all is a 401', async () => {
    const { owner, server } = await h.make.ownedServer();
    const other = await h.make.server(owner.user);
    f.put(server, { a: 'a' });
    f.put(other, { a: 'other' });
    const url = await downloadUrl(owner.token, server, 'a');
    const token = new URL(url).searchParams.get('token')!;
    const claims = decodeJwt(token);
    const resign = (key: Uint8Array, changes: Record<string, unknown>) =>
      new SignJWT({ ...claims, ...changes }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(key);
    const appKey =
      h.deps.appKey ??
      Buffer.from(
        fs
          .readFileSync(path.join(h.dataDir, 'app-key'), 'utf8')
          .trim()
          .replace(/^base64:/, ''),
        'base64',
      );

    // The payload swapped to the other server, signature kept: refused.
    const [head, , signature] = token.split('.');
    const swapped = `${head}.${Buffer.from(JSON.stringify({ ...claims, server_uuid: other.uuid })).toString('base64url')}.${signature}`;
    // Signed with the app key itself (as websocket tokens are), not the signed-URL key: refused.
    const wrongKey = await resign(appKey, { server_uuid: other.uuid });
    // The right key but the upload purpose on the download path: refused.
    const wrongPurpose = await resign(signedUrlKey(appKey), { purpose: 'file-upload' });
    for (const bad of [swapped, wrongKey, wrongPurpose, 'garbage', '']) {
      const res = await h.app.inject({ method: 'GET', url: `/download/file?token=${encodeURIComponent(bad)}` });
      expect(res.statusCode, bad).toBe(401);
      expect(res.json().errors[0].code).toBe('AuthenticationException');
    }
    expect((await h.app.inject({ method: 'GET', url: '/download/file' })).statusCode).toBe(401);
    // The right key and purpose for the other server, for a user who cannot see it: 403.
    const stranger = await h.make.user();
    const foreign = await resign(signedUrlKey(appKey), { server_uuid: other.uuid, user_uuid: stranger.user.uuid });
    expect((await h.app.inject({ method: 'GET', url: `/download/file?token=${foreign}` })).statusCode).toBe(403);
  });

  it('access is checked again at use: a subuser removed or stripped of the permission gets 403', async () => {
    const { server } = await h.make.ownedServer();
    f.put(server, { a: 'a' });
    const sub = await h.make.subuser(server, ['file.read-content']);
    const url = await downloadUrl(sub.token, server, 'a');
    expect((await h.app.inject({ method: 'GET', url: localPart(url) })).statusCode).toBe(200);
    await h.db.db.updateTable('subusers').set({ permissions: '["file.read"]' }).where('user_id', '=', sub.user.id).execute();
    expect((await h.app.inject({ method: 'GET', url: localPart(url) })).statusCode).toBe(403);
    await h.db.db.deleteFrom('subusers').where('user_id', '=', sub.user.id).execute();
    const gone = await h.app.inject({ method: 'GET', url: localPart(url) });
    expect(gone.statusCode).toBe(403);
    expect(gone.json().errors[0].code).toBe('AccessDeniedHttpException');
  });

  it("backup download: a link to a completed backup's archive, logged server:backup.download; needs backup.download", async () => {
    const { owner, server } = await h.make.ownedServer({ backupLimit: 5 });
    f.put(server, { 'world/level.dat': 'x'.repeat(5000) });
    const made = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid_short}/backups`,
      payload: {},
    });
    await h.jobs.idle();
    const uuid = made.json().attributes.uuid as string;
    const shown = (
      await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}/backups/${uuid}` })
    ).json();
    const res = await h.request(owner.token, {
      method: 'GET',
      url: `/api/client/servers/${server.uuid_short}/backups/${uuid}/download`,
    });
    expect(res.statusCode).toBe(200);
    const url = res.json().attributes.url as string;
    expect(url).toMatch(/^http:\/\/quetzal\.test\/download\/backup\?token=/);
    const archive = await h.app.inject({ method: 'GET', url: localPart(url) });
    expect(archive.statusCode).toBe(200);
    expect(archive.headers['content-disposition']).toContain(`filename="${uuid}.tar.gz"`);
    expect(archive.rawPayload.length).toBe(shown.attributes.bytes);
    expect(`sha1:${createHash('sha1').update(archive.rawPayload).digest('hex')}`).toBe(shown.attributes.checksum);
    const events = (await f.events(server)).map((e) => e.event);
    expect(events).toContain('server:backup.download');

    // A file link does not open a backup, nor a backup link a file.
    const fileLink = await downloadUrl(owner.token, server, 'world/level.dat');
    expect((await h.app.inject({ method: 'GET', url: `/download/backup?${new URL(fileLink).searchParams}` })).statusCode).toBe(
      401,
    );

    const reader = await h.make.subuser(server, ['backup.read']);
    const refused = await h.request(reader.token, {
      method: 'GET',
      url: `/api/client/servers/${server.uuid_short}/backups/${uuid}/download`,
    });
    expect(refused.statusCode).toBe(403);
    const downloader = await h.make.subuser(server, ['backup.download']);
    const allowed = await h.request(downloader.token, {
      method: 'GET',
      url: `/api/client/servers/${server.uuid_short}/backups/${uuid}/download`,
    });
    expect(allowed.statusCode).toBe(200);

    // A backup deleted after the link was made: 404 at use.
    await h.request(owner.token, { method: 'DELETE', url: `/api/client/servers/${server.uuid_short}/backups/${uuid}` });
    expect((await h.app.inject({ method: 'GET', url: localPart(url) })).statusCode).toBe(404);
  });

  it('backup download: a backup that did not complete has no archive (400)', async () => {
    const { owner, server } = await h.make.ownedServer({ backupLimit: 5 });
    const row = await h.db.db
      .insertInto('backups')
      .values({
        uuid: '11111111-2222-4333-8444-555555555555',
        server_id: server.id,
        name: 'failed',
        ignored_files: '[]',
        checksum: null,
        bytes: 0,
        is_successful: 0,
        is_locked: 0,
        created_at: h.clock.now(),
        completed_at: h.clock.now(),
      })
      .returning('uuid')
      .executeTakeFirstOrThrow();
    const res = await h.request(owner.token, {
      method: 'GET',
      url: `/api/client/servers/${server.uuid_short}/backups/${row.uuid}/download`,
    });
    expect(res.statusCode).toBe(400);
    expect(await f.events(server)).toEqual([]);
  });

  it('upload: every `files` part into ?directory=, one server:file.uploaded each; a part cannot choose its folder', async () => {
    const { owner, server } = await h.make.ownedServer();
    f.put(server, { 'plugins/old.jar': 'old' });
    const res = await h.request(owner.token, { method: 'GET', url: f.url(server, 'upload') });
    expect(res.statusCode).toBe(200);
    const url = res.json().attributes.url as string;
    expect(url).toMatch(/^http:\/\/quetzal\.test\/upload\/file\?token=/);
    const big = Buffer.alloc(300_000, 7);
    const body = multipartBody([
      { filename: 'a.jar', content: 'A' },
      { filename: 'big.bin', content: big },
      { filename: '../../escape.txt', content: 'E' },
      { field: 'other', filename: 'ignored.txt', content: 'I' },
    ]);
    const up = await h.app.inject({
      method: 'POST',
      url: `${localPart(url)}&directory=${encodeURIComponent('/plugins')}`,
      payload: body.payload,
      headers: { 'content-type': body.contentType },
    });
    expect(up.statusCode, up.body).toBe(204);
    expect(f.tree(server)).toEqual(['plugins/', 'plugins/a.jar', 'plugins/big.bin', 'plugins/escape.txt', 'plugins/old.jar']);
    expect(fs.readFileSync(path.join(f.volume(server), 'plugins/big.bin')).equals(big)).toBe(true);
    expect(await f.events(server)).toEqual([
      { event: 'server:file.uploaded', properties: { directory: '/plugins', file: 'a.jar' } },
      { event: 'server:file.uploaded', properties: { directory: '/plugins', file: 'big.bin' } },
      { event: 'server:file.uploaded', properties: { directory: '/plugins', file: 'escape.txt' } },
    ]);

    const hostile = await h.app.inject({
      method: 'POST',
      url: `${localPart(url)}&directory=${encodeURIComponent('../..')}`,
      payload: body.payload,
      headers: { 'content-type': body.contentType },
    });
    expect(hostile.statusCode).toBe(400);
    const notMultipart = await h.app.inject({ method: 'POST', url: localPart(url), payload: { a: 1 } });
    expect(notMultipart.statusCode).toBe(400);

    h.clock.advance(16 * 60 * 1000);
    const late = await h.app.inject({
      method: 'POST',
      url: localPart(url),
      payload: body.payload,
      headers: { 'content-type': body.contentType },
    });
    expect(late.statusCode).toBe(401);
  });

  it('upload: a subuser needs file.create, at issue and at use', async () => {
    const { server } = await h.make.ownedServer();
    const reader = await h.make.subuser(server, ['file.read']);
    expect((await h.request(reader.token, { method: 'GET', url: f.url(server, 'upload') })).statusCode).toBe(403);
    const creator = await h.make.subuser(server, ['file.create']);
    const url = (await h.request(creator.token, { method: 'GET', url: f.url(server, 'upload') })).json().attributes.url as string;
    await h.db.db.updateTable('subusers').set({ permissions: '["file.read"]' }).where('user_id', '=', creator.user.id).execute();
    const body = multipartBody([{ filename: 'a', content: 'a' }]);
    const res = await h.app.inject({
      method: 'POST',
      url: localPart(url),
      payload: body.payload,
      headers: { 'content-type': body.contentType },
    });
    expect(res.statusCode).toBe(403);
    expect(f.tree(server)).toEqual([]);
  });
});
