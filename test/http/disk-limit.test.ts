import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { DaemonBusyError, NO_LIMITS } from '../../src/daemon/daemon.js';
import type { ServerRow } from '../../src/db/schema.js';
import { HttpError } from '../../src/http/errors.js';
import { SYSTEM_ACTOR } from '../../src/modules/activity/activity.recorder.js';
import { createBackupAndWait } from '../../src/modules/backups/backups.service.js';
import { ECHO_STARTUP } from '../helpers/containment.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

const KIB = 1024;
const MIB = 1024 * KIB;

/**
 * The disk limit (docs/reference/containment.md, docs/reference/backups-and-restores.md#durability): measured on the volume; a start and a backup of
 * an over-limit volume are a 409, and a restore that would pass the limit
 * fails while staging, with the volume exactly as it was.
 */
describeEachDatabase('the disk limit', (database) => {
  const h = useHarness(database);
  afterEach(async () => {
    await h.jobs.idle();
  });

  const serverUrl = (server: ServerRow) => `/api/client/servers/${server.uuid_short}`;
  const backupsUrl = (server: ServerRow) => `${serverUrl(server)}/backups`;
  const power = (token: string, server: ServerRow, signal: string) =>
    h.request(token, { method: 'POST', url: `${serverUrl(server)}/power`, payload: { signal } });
  const restore = (token: string, server: ServerRow, backup: { uuid: string }, truncate: boolean) =>
    h.request(token, { method: 'POST', url: `${backupsUrl(server)}/${backup.uuid}/restore`, payload: { truncate } });

  /** Bytes that do not compress away: what a backup archive has to hold. */
  function writeFile(server: ServerRow, relative: string, bytes: number) {
    const file = path.join(h.daemon.volumeDir(server.uuid), relative);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(
      file,
      createHash('sha256')
        .update(relative)
        .digest()
        .toString('hex')
        .repeat(Math.ceil(bytes / 64))
        .slice(0, bytes),
    );
  }

  function removeFile(server: ServerRow, relative: string) {
    fs.rmSync(path.join(h.daemon.volumeDir(server.uuid), relative), { recursive: true });
  }

  /** Every entry of the volume, its kind, mode, owner and bytes (or link target), as one digest. */
  function volumeHash(server: ServerRow): string {
    const root = h.daemon.volumeDir(server.uuid);
    const hash = createHash('sha256');
    const walk = (relative: string) => {
      for (const name of fs.readdirSync(path.join(root, relative)).sort()) {
        const child = path.posix.join(relative, name);
        const full = path.join(root, child);
        const stat = fs.lstatSync(full);
        hash.update(`${child}\0${stat.mode}\0${stat.uid}:${stat.gid}\0`);
        if (stat.isSymbolicLink()) hash.update(`link:${fs.readlinkSync(full)}\0`);
        else if (stat.isDirectory()) walk(child);
        else hash.update(fs.readFileSync(full)).update('\0');
      }
    };
    walk('');
    return hash.digest('hex');
  }

  async function events(server: ServerRow) {
    const rows = await h.db.db
      .selectFrom('activity_logs')
      .select(['event', 'properties'])
      .where('server_id', '=', server.id)
      .orderBy('id')
      .execute();
    return rows.map((row) => ({ event: row.event, properties: JSON.parse(row.properties) as Record<string, unknown> }));
  }

  async function backupRows(server: ServerRow) {
    return h.db.db.selectFrom('backups').selectAll().where('server_id', '=', server.id).execute();
  }

  async function statusOf(server: ServerRow) {
    return (await h.db.db.selectFrom('servers').select('status').where('id', '=', server.id).executeTakeFirstOrThrow()).status;
  }

  async function setDiskLimit(server: ServerRow, diskMiB: number) {
    await h.db.db.updateTable('servers').set({ disk_mib: diskMiB }).where('id', '=', server.id).execute();
  }

  async function backupViaApi(token: string, server: ServerRow, name: string): Promise<{ uuid: string }> {
    const res = await h.request(token, { method: 'POST', url: backupsUrl(server), payload: { name } });
    expect(res.statusCode).toBe(200);
    await h.jobs.idle();
    const shown = await h.request(token, { method: 'GET', url: `${backupsUrl(server)}/${res.json().attributes.uuid}` });
    expect(shown.json().attributes.is_successful).toBe(true);
    return res.json().attributes;
  }

  /** The archives and partial archives in the backups folder. */
  const archives = () => fs.readdirSync(h.daemon.paths.backups).sort();

  function overLimitBody(used: number, limitMiB: number, before: string) {
    const detail =
      `This server is using more disk space than its limit allows (${Math.ceil(used / MIB)} MiB of ${limitMiB} MiB); ` +
      `delete files before ${before}.`;
    return { errors: [{ code: 'ConflictHttpException', status: '409', detail }] };
  }

  it('refuses to start a server whose volume is over its limit (409), and starts it once files are deleted', async () => {
    const { owner, server } = await h.make.ownedServer({ startup: ECHO_STARTUP, limits: { diskMiB: 1 } });
    writeFile(server, 'world/region.bin', 1536 * KIB);
    const used = await h.daemon.diskUsage({ uuid: server.uuid, startup: null, stopCommand: null });
    expect(used).toBeGreaterThan(1536 * KIB);

    const refused = await power(owner.token, server, 'start');
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual(overLimitBody(used, 1, 'starting it'));
    expect(
      (await h.request(owner.token, { method: 'GET', url: `${serverUrl(server)}/resources` })).json().attributes.current_state,
    ).toBe('offline');
    expect(fs.existsSync(path.join(h.dataDir, 'logs', `${server.uuid}.log`))).toBe(false);
    expect(await events(server)).toEqual([]);
    // A restart is carried out in the background, but its refusal is told at once, as a start's.
    const restart = await power(owner.token, server, 'restart');
    expect(restart.statusCode).toBe(409);
    expect(restart.json()).toEqual(overLimitBody(used, 1, 'starting it'));
    expect(await events(server)).toEqual([]);
    // And the daemon refuses it the same way for any other caller (a scheduled task).
    const target = { uuid: server.uuid, startup: ECHO_STARTUP, stopCommand: null, limits: { ...NO_LIMITS, diskMiB: 1 } };
    await expect(h.daemon.power(target, 'restart')).rejects.toBeInstanceOf(DaemonBusyError);
    expect(await h.daemon.state(target)).toBe('offline');

    removeFile(server, 'world');
    writeFile(server, 'world/small.bin', 100 * KIB);
    expect((await power(owner.token, server, 'start')).statusCode).toBe(204);
    expect((await events(server)).map((e) => e.event)).toEqual(['server:power.start']);
    expect((await power(owner.token, server, 'kill')).statusCode).toBe(204);
  });

  it('a server at exactly its limit, or without one, starts', async () => {
    const unlimited = await h.make.ownedServer({ startup: ECHO_STARTUP });
    writeFile(unlimited.server, 'big.bin', 3 * MIB);
    expect((await power(unlimited.owner.token, unlimited.server, 'start')).statusCode).toBe(204);
    expect((await power(unlimited.owner.token, unlimited.server, 'kill')).statusCode).toBe(204);

    const exact = await h.make.ownedServer({ startup: ECHO_STARTUP, limits: { diskMiB: 1 } });
    const echo = await h.daemon.diskUsage({ uuid: exact.server.uuid, startup: null, stopCommand: null });
    writeFile(exact.server, 'fill.bin', MIB - echo);
    expect(await h.daemon.diskUsage({ uuid: exact.server.uuid, startup: null, stopCommand: null })).toBe(MIB);
    expect((await power(exact.owner.token, exact.server, 'start')).statusCode).toBe(204);
    expect((await power(exact.owner.token, exact.server, 'kill')).statusCode).toBe(204);
  });

  it('refuses a backup of an over-limit volume (409) without creating anything, by hand or as a scheduled task does', async () => {
    const { owner, server } = await h.make.ownedServer({ backupLimit: 5, limits: { diskMiB: 1 } });
    writeFile(server, 'big.bin', 2 * MIB);
    const used = await h.daemon.diskUsage({ uuid: server.uuid, startup: null, stopCommand: null });
    const before = archives();

    const refused = await h.request(owner.token, { method: 'POST', url: backupsUrl(server), payload: { name: 'too big' } });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual(overLimitBody(used, 1, 'creating a backup'));
    // The path the scheduler's backup task and the admin command take.
    const scheduled = await createBackupAndWait(h.deps, server, SYSTEM_ACTOR, { ignored: [] }).catch((err: unknown) => err);
    expect(scheduled).toBeInstanceOf(HttpError);
    expect(scheduled).toMatchObject({ status: 409, detail: overLimitBody(used, 1, 'creating a backup').errors[0]!.detail });
    await h.jobs.idle();
    expect(await backupRows(server)).toEqual([]);
    expect(await events(server)).toEqual([]);
    expect(archives()).toEqual(before);
    // The daemon refuses on its own too, before writing any archive.
    const target = { uuid: server.uuid, startup: null, stopCommand: null, limits: { ...NO_LIMITS, diskMiB: 1 } };
    await expect(h.daemon.createBackup(target, { uuid: randomUUID(), ignored: [] })).rejects.toBeInstanceOf(DaemonBusyError);
    expect(archives()).toEqual(before);

    removeFile(server, 'big.bin');
    writeFile(server, 'small.bin', 512 * KIB);
    await backupViaApi(owner.token, server, 'fits');
    expect((await backupRows(server)).map((b) => [b.name, b.is_successful])).toEqual([['fits', 1]]);
  });

  it('the restoring status still answers first: a backup during a restore is refused as before', async () => {
    const { owner, server } = await h.make.ownedServer({ limits: { diskMiB: 1 }, status: 'restoring_backup' });
    writeFile(server, 'big.bin', 2 * MIB);
    const refused = await h.request(owner.token, { method: 'POST', url: backupsUrl(server), payload: {} });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().errors[0].detail).toBe('This server is currently restoring a backup, please try again later.');
  });

  for (const truncate of [true, false]) {
    const mode = truncate ? 'truncate' : 'merge';

    it(`fails a restore (${mode}) whose archive expands past the limit, before the volume changes`, async () => {
      const { owner, server } = await h.make.ownedServer({ backupLimit: 5, limits: { diskMiB: 4 } });
      writeFile(server, 'world/big.bin', 1536 * KIB);
      writeFile(server, 'config.txt', 10);
      const backup = await backupViaApi(owner.token, server, 'big');
      // Then the volume changes and the limit is lowered under what the backup holds.
      removeFile(server, 'world');
      writeFile(server, 'config.txt', 20);
      writeFile(server, 'new/data.bin', 100 * KIB);
      fs.symlinkSync('new/data.bin', path.join(h.daemon.volumeDir(server.uuid), 'link'));
      await setDiskLimit(server, 1);
      const before = volumeHash(server);

      const res = await restore(owner.token, server, backup, truncate);
      expect(res.statusCode).toBe(204);
      await h.jobs.idle();

      expect(volumeHash(server)).toBe(before);
      expect(await statusOf(server)).toBeNull();
      expect((await events(server)).filter((e) => e.event.startsWith('server:backup.restore'))).toEqual([
        { event: 'server:backup.restore', properties: { name: 'big', truncate } },
        { event: 'server:backup.restore-failed', properties: { name: 'big' } },
      ]);
      // Nothing of the restore is left beside the volume.
      expect(await h.daemon.listRestores()).toEqual([]);
      expect(fs.readdirSync(h.daemon.paths.volumes).filter((name) => name.startsWith(server.uuid))).toEqual([server.uuid]);

      // Under the limit the same restore works.
      await setDiskLimit(server, 3);
      expect((await restore(owner.token, server, backup, truncate)).statusCode).toBe(204);
      await h.jobs.idle();
      expect(fs.statSync(path.join(h.daemon.volumeDir(server.uuid), 'world', 'big.bin')).size).toBe(1536 * KIB);
      expect((await events(server)).at(-1)).toEqual({ event: 'server:backup.restore-complete', properties: { name: 'big' } });
    });
  }

  it('a merge counts what the volume already holds; a truncate does not', async () => {
    const { owner, server } = await h.make.ownedServer({ backupLimit: 5, limits: { diskMiB: 1 } });
    writeFile(server, 'old.bin', 500 * KIB);
    const backup = await backupViaApi(owner.token, server, 'old');
    removeFile(server, 'old.bin');
    writeFile(server, 'current.bin', 700 * KIB);
    const before = volumeHash(server);

    // 700 KiB there + 500 KiB more > 1 MiB: refused, nothing changed.
    expect((await restore(owner.token, server, backup, false)).statusCode).toBe(204);
    await h.jobs.idle();
    expect(volumeHash(server)).toBe(before);
    expect((await events(server)).at(-1)).toEqual({ event: 'server:backup.restore-failed', properties: { name: 'old' } });
    expect(await statusOf(server)).toBeNull();

    // With room for it, the merge works and keeps the current file.
    writeFile(server, 'current.bin', 300 * KIB);
    expect((await restore(owner.token, server, backup, false)).statusCode).toBe(204);
    await h.jobs.idle();
    expect((await events(server)).at(-1)).toEqual({ event: 'server:backup.restore-complete', properties: { name: 'old' } });
    const volume = h.daemon.volumeDir(server.uuid);
    expect([fs.statSync(path.join(volume, 'old.bin')).size, fs.statSync(path.join(volume, 'current.bin')).size]).toEqual([
      500 * KIB,
      300 * KIB,
    ]);

    // The truncate empties the volume first: only the archive counts.
    writeFile(server, 'current.bin', 900 * KIB);
    expect((await restore(owner.token, server, backup, true)).statusCode).toBe(204);
    await h.jobs.idle();
    expect((await events(server)).at(-1)).toEqual({ event: 'server:backup.restore-complete', properties: { name: 'old' } });
    expect(fs.readdirSync(volume)).toEqual(['old.bin']);
  });

  it('a volume already over its limit merges only folders and empty files', async () => {
    const { owner, server } = await h.make.ownedServer({ backupLimit: 5, limits: { diskMiB: 1 } });
    writeFile(server, 'empty/placeholder.txt', 0);
    const empty = await backupViaApi(owner.token, server, 'empty');
    writeFile(server, 'one-byte.txt', 1);
    const oneByte = await backupViaApi(owner.token, server, 'one byte');
    removeFile(server, 'empty');
    removeFile(server, 'one-byte.txt');
    writeFile(server, 'huge.bin', 2 * MIB);
    const before = volumeHash(server);

    expect((await restore(owner.token, server, oneByte, false)).statusCode).toBe(204);
    await h.jobs.idle();
    expect(volumeHash(server)).toBe(before);
    expect((await events(server)).at(-1)).toEqual({ event: 'server:backup.restore-failed', properties: { name: 'one byte' } });

    expect((await restore(owner.token, server, empty, false)).statusCode).toBe(204);
    await h.jobs.idle();
    expect((await events(server)).at(-1)).toEqual({ event: 'server:backup.restore-complete', properties: { name: 'empty' } });
    expect(fs.readdirSync(h.daemon.volumeDir(server.uuid)).sort()).toEqual(['empty', 'huge.bin']);
  });
});
