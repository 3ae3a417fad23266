import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createArchive } from '../../../../src/daemon/local/archive/create.js';
import { archiveNames, makeArchiveSandbox, write } from './trees.js';

let root: string;
let volume: string;
let outside: string;
let backups: string;

beforeEach(() => {
  ({ root, volume, outside, backups } = makeArchiveSandbox());
});

afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

describe('createArchive', () => {
  it('skips ignored paths (gitignore syntax) and stores symlinks without following them', async () => {
    const source = path.join(root, 'source');
    for (const name of [
      'server.log',
      'keep.log',
      'logs/old.log',
      'cache/x.bin',
      'sub/cache/y.bin',
      'sub/run.txt',
      'other/cache',
      'build/out',
      'src/build/kept',
    ]) {
      write(path.join(source, name), name);
    }
    fs.symlinkSync(outside, path.join(source, 'outside-link'));
    const archivePath = path.join(backups, 'ignore.tar.gz');
    await createArchive({
      volumeDir: source,
      archivePath,
      ignore: ['*.log', 'cache/', '!keep.log', '/build', '', '# a comment'],
    });
    expect(archiveNames(archivePath)).toEqual([
      { path: 'keep.log', type: 'File' },
      { path: 'logs/', type: 'Directory' },
      { path: 'other/', type: 'Directory' },
      // `cache/` matches folders only: a file named cache stays.
      { path: 'other/cache', type: 'File' },
      { path: 'outside-link', type: 'SymbolicLink' },
      { path: 'src/', type: 'Directory' },
      // `/build` is anchored to the volume root.
      { path: 'src/build/', type: 'Directory' },
      { path: 'src/build/kept', type: 'File' },
      { path: 'sub/', type: 'Directory' },
      { path: 'sub/run.txt', type: 'File' },
    ]);
  });

  it('skips FIFOs and other special files instead of failing', async () => {
    const source = path.join(root, 'source');
    write(path.join(source, 'world.dat'), 'data');
    execFileSync('mkfifo', [path.join(source, 'console.pipe')]);
    const archivePath = path.join(backups, 'fifo.tar.gz');
    await createArchive({ volumeDir: source, archivePath, ignore: [] });
    expect(archiveNames(archivePath)).toEqual([{ path: 'world.dat', type: 'File' }]);
  });

  it('leaves no file at archivePath, and no temporary file, when it fails or is aborted', async () => {
    const archivePath = path.join(backups, 'failed.tar.gz');
    await expect(createArchive({ volumeDir: path.join(root, 'missing'), archivePath, ignore: [] })).rejects.toThrow(/ENOENT/);
    expect(fs.readdirSync(backups)).toEqual([]);

    await expect(createArchive({ volumeDir: volume, archivePath, ignore: [], signal: AbortSignal.abort() })).rejects.toThrow();
    expect(fs.readdirSync(backups)).toEqual([]);

    write(path.join(volume, 'big.bin'), randomBytes(8 * 1024 * 1024));
    const controller = new AbortController();
    const pending = createArchive({ volumeDir: volume, archivePath, ignore: [], signal: controller.signal });
    // Abort once the temporary file is being written.
    while (!fs.readdirSync(backups).some((name) => name.endsWith('.partial'))) await new Promise((r) => setTimeout(r, 1));
    controller.abort();
    await expect(pending).rejects.toThrow(/abort/i);
    expect(fs.readdirSync(backups)).toEqual([]);

    // An existing archive is only ever replaced by a complete one.
    fs.writeFileSync(archivePath, 'previous');
    await expect(createArchive({ volumeDir: path.join(root, 'missing'), archivePath, ignore: [] })).rejects.toThrow();
    expect(fs.readdirSync(backups)).toEqual(['failed.tar.gz']);
    expect(fs.readFileSync(archivePath, 'utf8')).toBe('previous');
  });

  it('refuses a volume that is itself a symlink', async () => {
    const linked = path.join(root, 'linked-volume');
    fs.symlinkSync(outside, linked);
    const archivePath = path.join(backups, 'linked.tar.gz');
    await expect(createArchive({ volumeDir: linked, archivePath, ignore: [] })).rejects.toThrow(/linked-volume is not a folder/);
    expect(fs.readdirSync(backups)).toEqual([]);
  });

  it('holds no descriptor on the volume once it is done, failed or aborted', async () => {
    const heldInVolume = () =>
      fs.readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(volume);
        } catch {
          return false;
        }
      });
    write(path.join(volume, 'deep', 'er', 'still', 'big.bin'), randomBytes(4 * 1024 * 1024));
    await createArchive({ volumeDir: volume, archivePath: path.join(backups, 'done.tar.gz'), ignore: [] });
    expect(heldInVolume()).toEqual([]);

    const controller = new AbortController();
    const archivePath = path.join(backups, 'aborted.tar.gz');
    const pending = createArchive({ volumeDir: volume, archivePath, ignore: [], signal: controller.signal });
    while (!fs.readdirSync(backups).some((name) => name.endsWith('.partial'))) await new Promise((r) => setTimeout(r, 1));
    controller.abort();
    await expect(pending).rejects.toThrow(/abort/i);
    // The walk's descriptors close as the aborted stream unwinds.
    for (let i = 0; i < 100 && heldInVolume().length > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(heldInVolume()).toEqual([]);
  });
});
