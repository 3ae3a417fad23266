/**
 * The inode limit where the daemon refuses before anything changes (docs/reference/containment.md):
 * a start, a backup and a restore that would pass it, counted as the disk
 * walk counts (every file, folder and link, the volume's own folder
 * included). A plain (unconfined) local daemon: the limit is the daemon's
 * measure, not the container's.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DaemonBusyError, NO_LIMITS, type DaemonServer } from '../../../../src/daemon/daemon.js';
import { createArchive } from '../../../../src/daemon/local/archive/create.js';
import { LocalDaemon } from '../../../../src/daemon/local/local-daemon.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function daemonInTmp() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-inodes-'));
  const daemon = new LocalDaemon(dataDir, { stopGraceMs: 500 });
  await daemon.start();
  cleanups.push(async () => {
    await daemon.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return daemon;
}

const withInodes = (inodes: number): DaemonServer => ({
  uuid: randomUUID(),
  startup: 'exec sleep 1000',
  stopCommand: null,
  limits: { ...NO_LIMITS, inodes },
});

describe('the inode limit before anything runs or changes', () => {
  it('refuses a start and a backup of a volume over it (409), naming both figures; at the limit it starts', async () => {
    const daemon = await daemonInTmp();
    const server = withInodes(5);
    await daemon.prepareVolume(server);
    const volume = daemon.volumeDir(server.uuid);
    for (const name of ['a', 'b', 'c']) fs.writeFileSync(path.join(volume, name), '');
    fs.symlinkSync('a', path.join(volume, 'link'));
    // The volume, three empty files and a link: 5.
    await daemon.assertStartable(server);
    fs.mkdirSync(path.join(volume, 'folder'));
    await expect(daemon.power(server, 'start')).rejects.toThrow(DaemonBusyError);
    await expect(daemon.power(server, 'start')).rejects.toThrow('(6 files and folders of 5)');
    await expect(daemon.createBackup(server, { uuid: randomUUID(), ignored: [] })).rejects.toThrow(DaemonBusyError);
    expect(await daemon.state(server)).toBe('offline');
  });

  it('fails a restore whose entries would pass it, before the volume changes', async () => {
    const daemon = await daemonInTmp();
    const source = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-inodes-src-'));
    cleanups.push(async () => fs.rmSync(source, { recursive: true, force: true }));
    for (let i = 0; i < 10; i++) fs.writeFileSync(path.join(source, `f${i}`), 'x');
    const backupUuid = randomUUID();
    const archive = await createArchive({ volumeDir: source, archivePath: daemon.backupPath(backupUuid), ignore: [] });

    const tight = withInodes(6);
    await daemon.prepareVolume(tight);
    fs.writeFileSync(path.join(daemon.volumeDir(tight.uuid), 'kept.txt'), 'before');
    await expect(daemon.restoreBackup(tight, { uuid: backupUuid, sha1: archive.sha1 }, { truncate: true })).rejects.toThrow(
      /entries/,
    );
    expect(fs.readdirSync(daemon.volumeDir(tight.uuid))).toEqual(['kept.txt']);

    const roomy = withInodes(20);
    await daemon.prepareVolume(roomy);
    await daemon.restoreBackup(roomy, { uuid: backupUuid, sha1: archive.sha1 }, { truncate: true });
    expect(fs.readdirSync(daemon.volumeDir(roomy.uuid))).toHaveLength(10);
  });
});
