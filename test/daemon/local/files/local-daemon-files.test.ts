/**
 * LocalDaemon.files as the service gets it: wired to the daemon's volumes,
 * backups, usage measurement and owner; delete_files goes through it; a
 * restore makes it forget its measurement; the daemon's start sweeps
 * decompress staging a crash left.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DaemonServer } from '../../../../src/daemon/daemon.js';
import { LocalDaemon } from '../../../../src/daemon/local/local-daemon.js';
import { refusal } from './helpers.js';

const MIB = 1024 * 1024;
let dataDir: string;
let daemon: LocalDaemon;
let server: DaemonServer;

beforeEach(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-daemon-files-'));
  daemon = new LocalDaemon(dataDir);
  await daemon.start();
  server = {
    uuid: randomUUID(),
    startup: null,
    stopCommand: null,
    limits: { memoryMiB: 0, cpuPercent: 0, diskMiB: 2, pids: null },
  };
  await daemon.prepareVolume(server);
});
afterEach(async () => {
  await daemon.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('LocalDaemon.files', () => {
  it('writes into the server volume, within its disk limit', async () => {
    await daemon.files.writeFile(server, 'a.bin', Buffer.alloc(MIB));
    expect(fs.statSync(path.join(daemon.volumeDir(server.uuid), 'a.bin')).size).toBe(MIB);
    expect((await refusal(daemon.files.writeFile(server, 'b.bin', Buffer.alloc(MIB + 1)))).kind).toBe('disk-limit');
    // Deleting frees the room at once (the measurement is dropped).
    await daemon.deleteFiles(server, ['a.bin']);
    await daemon.files.writeFile(server, 'b.bin', Buffer.alloc(MIB + 1));
  });

  it('deleteFiles refuses a path through a link, deleting nothing outside', async () => {
    const outside = path.join(dataDir, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'keep.txt'), 'keep');
    fs.symlinkSync(outside, path.join(daemon.volumeDir(server.uuid), 'link'));
    expect((await refusal(daemon.deleteFiles(server, ['link/keep.txt']))).kind).toBe('invalid-path');
    expect((await refusal(daemon.deleteFiles(server, ['../x']))).kind).toBe('invalid-path');
    expect(fs.readFileSync(path.join(outside, 'keep.txt'), 'utf8')).toBe('keep');
  });

  it("opens a backup's archive from the daemon's backups folder", async () => {
    const backup = randomUUID();
    await daemon.files.writeFile(server, 'world.txt', Buffer.from('world'));
    const archive = await daemon.createBackup(server, { uuid: backup, ignored: [] });
    const opened = await daemon.files.openBackup(server, backup);
    expect(opened.bytes).toBe(archive.bytes);
    opened.stream.destroy();
    expect((await refusal(daemon.files.openBackup(server, randomUUID()))).kind).toBe('not-found');
  });

  it('start sweeps stale decompress staging beside the volumes', async () => {
    const stale = path.join(daemon.paths.volumes, '.decompress-00112233aabbccdd');
    fs.mkdirSync(path.join(stale, 'staged'), { recursive: true });
    const longAgo = new Date(Date.now() - 24 * 60 * 60 * 1000);
    fs.utimesSync(stale, longAgo, longAgo);
    await daemon.start();
    expect(fs.existsSync(stale)).toBe(false);
  });
});
