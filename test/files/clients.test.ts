import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Client as JsPteroClient } from 'jspteroapi';
import { BackupManager, FileManager, PteroClient } from '@devnote-dev/pterojs';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { fileTools, multipartBody } from './files-helpers.js';
import { scratchDir } from '../helpers/scratch.js';

/** A port free now, found before the app is built, so that APP_URL (which signed URLs are built on) names it. */
function freePort(): number {
  const script = "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})";
  return Number(execFileSync(process.execPath, ['-e', script]).toString().trim());
}

/**
 * Every file method of jspteroapi and PteroJS (and their backup download),
 * unchanged, over real HTTP: they must work against Quetzal as they do
 * against Pterodactyl. PteroJS's FileManager.upload is private and empty in
 * the library (it sends nothing); its getUploadURL is what its users have.
 */
describeEachDatabase('existing clients: files', (database) => {
  const port = freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const h = useHarness(database, { APP_URL: baseUrl });
  const f = fileTools(h);
  const scratch = scratchDir('quetzal-clients-');

  beforeAll(async () => {
    await h.app.listen({ host: '127.0.0.1', port });
  });
  afterAll(async () => {
    await h.app.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('jspteroapi: every file method, and the backup download link', async () => {
    const { owner, server } = await h.make.ownedServer({ backupLimit: 2 });
    const id = server.uuid_short;
    const client = new JsPteroClient(baseUrl, owner.token, undefined, true);
    f.put(server, { 'config/app.yml': 'a: 1\n' });

    expect(await client.writeFile(id, '/config/new.txt', 'hello from jspteroapi')).toBe('Successfuly written the file!');
    expect(f.read(server, 'config/new.txt')).toBe('hello from jspteroapi');

    type Listed = { attributes: { name: string; is_file: boolean } }[];
    const root = (await client.getAllFiles(id)) as unknown as Listed;
    expect(root.map((e) => e.attributes.name)).toEqual(['config']);
    const inConfig = (await client.getAllFiles(id, 'config')) as unknown as Listed;
    expect(inConfig.map((e) => e.attributes.name)).toEqual(['app.yml', 'new.txt']);

    expect(await client.getFileContents(id, 'config/new.txt')).toBe('hello from jspteroapi');

    const link = await client.getFileDownloadLink(id, 'config/new.txt');
    const downloaded = await fetch(link);
    expect(downloaded.status).toBe(200);
    expect(await downloaded.text()).toBe('hello from jspteroapi');

    expect(await client.copyFile(id, '/config/new.txt')).toBe('Successfuly copied!');
    expect(f.exists(server, 'config/new copy.txt')).toBe(true);

    expect(await client.renameFile(id, { root: '/config', files: [{ from: 'new copy.txt', to: 'renamed.txt' }] })).toBe(
      'Successfuly renamed!',
    );
    expect(f.read(server, 'config/renamed.txt')).toBe('hello from jspteroapi');

    expect(await client.createFolder(id, { root: '/', name: 'made' })).toBe('Successfuly created!');
    expect(f.exists(server, 'made')).toBe(true);

    const archive = (await client.compressFile(id, { root: '/', files: ['config'] })) as unknown as { name: string };
    expect(archive.name).toMatch(/\.tar\.gz$/);
    expect(await client.deleteFile(id, { root: '/', files: ['config'] })).toBe('Successfuly deleted!');
    expect(f.exists(server, 'config')).toBe(false);
    expect(await client.decompressFile(id, { root: '/', file: archive.name })).toBe('Successfuly decompressed!');
    expect(f.read(server, 'config/app.yml')).toBe('a: 1\n');

    const uploadUrl = await client.getFileUploadLink(id);
    const body = multipartBody([{ filename: 'up.txt', content: 'uploaded' }]);
    const uploaded = await fetch(`${uploadUrl}&directory=/made`, {
      method: 'POST',
      body: body.payload,
      headers: { 'content-type': body.contentType },
    });
    expect(uploaded.status).toBe(204);
    expect(f.read(server, 'made/up.txt')).toBe('uploaded');

    const backup = await client.createBackup(id, 'for download');
    await h.jobs.idle();
    const backupLink = await client.getBackupDownloadLink(id, backup.uuid);
    const archiveBytes = await fetch(backupLink);
    expect(archiveBytes.status).toBe(200);
    expect((await archiveBytes.arrayBuffer()).byteLength).toBeGreaterThan(0);
  });

  it('PteroJS: every FileManager method, and BackupManager.getDownloadURL / download', async () => {
    const { owner, server } = await h.make.ownedServer({ backupLimit: 2 });
    const id = server.uuid_short;
    const client = new PteroClient(baseUrl, owner.token, {
      fetchClient: false,
      servers: { fetch: false, cache: false },
    } as never);
    const files = new FileManager(client, id);
    f.put(server, { 'cfg/a.txt': 'alpha' });

    await files.write('/cfg/b.txt', 'written by pterojs');
    expect(f.read(server, 'cfg/b.txt')).toBe('written by pterojs');

    const listed = await files.fetch('/cfg');
    expect([...listed.keys()]).toEqual(['a.txt', 'b.txt']);
    expect(listed.get('b.txt')).toMatchObject({ isFile: true, modeBits: BigInt(644), mimetype: 'text/plain; charset=utf-8' });

    expect(await files.getContents('/cfg/b.txt')).toBe('written by pterojs');

    const downloadUrl = await files.getDownloadURL('/cfg/b.txt');
    expect(downloadUrl.startsWith(`${baseUrl}/download/file?token=`)).toBe(true);
    const dest = path.join(scratch, 'b.txt');
    await files.download('/cfg/b.txt', dest);
    expect(fs.readFileSync(dest, 'utf8')).toBe('written by pterojs');

    const uploadUrl = await files.getUploadURL('/cfg');
    expect(uploadUrl.startsWith(`${baseUrl}/upload/file?token=`)).toBe(true);

    await files.createFolder('/', 'folder');
    expect(f.exists(server, 'folder')).toBe(true);
    await files.rename('/cfg', [{ from: 'a.txt', to: '../folder/a.txt' }]);
    expect(f.read(server, 'folder/a.txt')).toBe('alpha');
    await files.chmod('/folder', [{ file: 'a.txt', mode: 600 }]);
    expect((fs.statSync(path.join(f.volume(server), 'folder/a.txt')).mode & 0o777).toString(8)).toBe('600');
    await files.copy('/cfg/b.txt');
    expect(f.exists(server, 'cfg/b copy.txt')).toBe(true);

    const archive = await files.compress('/', ['folder']);
    expect(archive).toMatchObject({ name: expect.stringMatching(/\.tar\.gz$/), isFile: true });
    await files.delete('/', ['folder']);
    expect(f.exists(server, 'folder')).toBe(false);
    await files.decompress('/', archive.name);
    expect(f.read(server, 'folder/a.txt')).toBe('alpha');

    const made = await h.request(owner.token, { method: 'POST', url: `/api/client/servers/${id}/backups`, payload: {} });
    await h.jobs.idle();
    const backups = new BackupManager(client, id);
    const backupUrl = await backups.getDownloadURL(made.json().attributes.uuid);
    expect(backupUrl.startsWith(`${baseUrl}/download/backup?token=`)).toBe(true);
    await backups.download(made.json().attributes.uuid, path.join(scratch, 'backup.tar.gz'));
    expect(fs.statSync(path.join(scratch, 'backup.tar.gz')).size).toBeGreaterThan(0);
  });
});
