import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { create as createTar } from 'tar';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createArchive } from '../../../../src/daemon/local/archive/create.js';
import { restoreArchive } from '../../../../src/daemon/local/archive/restore.js';
import { RestoreError } from '../../../../src/daemon/local/archive/restore-error.js';
import { rawTar, tgz, type RawEntry } from './tarballs.js';
import { makeArchiveSandbox, sha1, snapshot, write } from './trees.js';

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

function stagingLeftovers(): string[] {
  return fs.readdirSync(root).filter((name) => name.startsWith('.restore-'));
}

/** Writes `content` as a backup file and returns its path. */
function backupFile(content: Buffer, name = 'backup.tar.gz'): string {
  const file = path.join(backups, name);
  fs.writeFileSync(file, content);
  return file;
}

/** Builds an archive from a fresh source volume laid out by `files` (path -> content; trailing '/' = empty dir). */
async function archiveOf(files: Record<string, string>, ignore: string[] = []): Promise<{ file: string; sha1: string }> {
  const source = fs.mkdtempSync(path.join(root, 'source-'));
  for (const [name, content] of Object.entries(files)) {
    if (name.endsWith('/')) fs.mkdirSync(path.join(source, name), { recursive: true });
    else write(path.join(source, name), content);
  }
  const file = path.join(backups, `${path.basename(source)}.tar.gz`);
  const result = await createArchive({ volumeDir: source, archivePath: file, ignore });
  fs.rmSync(source, { recursive: true });
  return { file, sha1: result.sha1 };
}

/**
 * The restore of `archive` is refused with a RestoreError whose message matches
 * `reason`, with and without truncate; the volume is unchanged byte for byte,
 * nothing appeared or changed outside it, and no staging folder is left.
 */
async function expectRefused(archive: string, reason: RegExp, expectedSha1: string | null = null): Promise<void> {
  const volumeBefore = snapshot(volume);
  const outsideBefore = snapshot(outside);
  const rootBefore = fs.readdirSync(root).sort();
  for (const truncate of [false, true]) {
    const error = await restoreArchive({ archivePath: archive, volumeDir: volume, expectedSha1, truncate }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error, `truncate=${truncate}`).toBeInstanceOf(RestoreError);
    expect((error as Error).message).toMatch(reason);
    expect((error as Error).message).not.toContain('\n');
    expect(snapshot(volume), `truncate=${truncate}`).toEqual(volumeBefore);
    expect(snapshot(outside)).toEqual(outsideBefore);
    expect(fs.readdirSync(root).sort()).toEqual(rootBefore);
    expect(stagingLeftovers()).toEqual([]);
  }
}

// A good entry first, replacing a file the volume has: a refusal later in the archive must undo nothing because nothing was done.
const replaceA: RawEntry = { name: 'a.txt', body: 'REPLACED' };

describe('restoreArchive refuses unsafe or broken archives, leaving everything as it was', () => {
  it('a missing archive', async () => {
    await expectRefused(path.join(backups, 'nope.tar.gz'), /cannot be read \(ENOENT\)/);
  });

  it('an archive that is a directory, not a file', async () => {
    fs.mkdirSync(path.join(backups, 'dir.tar.gz'));
    await expectRefused(path.join(backups, 'dir.tar.gz'), /is not a file/);
  });

  it('a sha1 mismatch, even when the archive itself is fine', async () => {
    const { file, sha1: actual } = await archiveOf({ 'a.txt': 'from the backup' });
    await expectRefused(file, /does not match the recorded checksum/, '0'.repeat(40));
    // The right checksum, in either recorded form, is accepted.
    await restoreArchive({ archivePath: file, volumeDir: volume, expectedSha1: `sha1:${actual.toUpperCase()}`, truncate: false });
    expect(fs.readFileSync(path.join(volume, 'a.txt'), 'utf8')).toBe('from the backup');
  });

  it('a sha1 mismatch is the reason given, whatever else is wrong with the archive', async () => {
    // The checksum is checked before extraction (docs/reference/backups-and-restores.md#restoring): the extraction's own refusal is never reached.
    const unsafe = backupFile(tgz([replaceA, { name: path.join(outside, 'pwned'), body: 'x' }]));
    await expectRefused(unsafe, /does not match the recorded checksum/, '0'.repeat(40));
    const truncated = backupFile(gzipSync(rawTar([replaceA], { end: false })), 'cut.tar.gz');
    await expectRefused(truncated, /does not match the recorded checksum/, '0'.repeat(40));
  });

  it('an absolute path', async () => {
    await expectRefused(backupFile(tgz([replaceA, { name: path.join(outside, 'pwned'), body: 'x' }])), /has an absolute path/);
  });

  it.each([['../outside/pwned'], ['../../outside/pwned'], ['a/../../outside/pwned'], ['dir/../../../outside/pwned'], ['..']])(
    'a path with a .. segment: %s',
    async (name) => {
      await expectRefused(backupFile(tgz([replaceA, { name, body: 'x' }])), /leaves the volume/);
    },
  );

  it('a .. path hidden in a pax header (the ustar name looks harmless)', async () => {
    const archive = tgz([replaceA, { name: 'harmless.txt', pax: { path: '../outside/pwned' }, body: 'x' }]);
    await expectRefused(backupFile(archive), /'\.\.\/outside\/pwned' leaves the volume/);
  });

  it('a .. path hidden in a GNU long-name header', async () => {
    const archive = tgz([replaceA, { name: 'harmless.txt', longName: '../../outside/pwned', body: 'x' }]);
    await expectRefused(backupFile(archive), /leaves the volume/);
  });

  it('a hard link, even to a file inside the archive', async () => {
    await expectRefused(backupFile(tgz([replaceA, { name: 'hl', type: '1', linkname: 'a.txt' }])), /is a hard link/);
    await expectRefused(
      backupFile(tgz([replaceA, { name: 'hl', type: '1', linkname: path.join(outside, 'secret.txt') }])),
      /is a hard link/,
    );
  });

  it('a symlink to /etc', async () => {
    await expectRefused(
      backupFile(tgz([replaceA, { name: 'etc', type: '2', linkname: '/etc' }, { name: 'etc/quetzal-archive-test', body: 'x' }])),
      /symlink to the absolute path '\/etc'/,
    );
    expect(fs.existsSync('/etc/quetzal-archive-test')).toBe(false);
  });

  it('a symlink to an absolute path, then a file written through it', async () => {
    const archive = tgz([replaceA, { name: 'out', type: '2', linkname: outside }, { name: 'out/pwned', body: 'x' }]);
    await expectRefused(backupFile(archive), /symlink to the absolute path/);
  });

  it.each([['../..'], ['..'], ['sub/../..'], ['a/../b']])('a symlink whose target climbs: %s', async (target) => {
    const archive = tgz([replaceA, { name: 'up', type: '2', linkname: target }, { name: 'up/outside/pwned', body: 'x' }]);
    await expectRefused(backupFile(archive), /climbs with '\.\.'/);
  });

  it('a chain of links that each look inside the volume: d -> sub/.., e -> d/..', async () => {
    const archive = tgz([
      replaceA,
      { name: 'sub/', type: '5' },
      { name: 'd', type: '2', linkname: 'sub/..' },
      { name: 'e', type: '2', linkname: 'd/..' },
      { name: 'e/outside/pwned', body: 'x' },
    ]);
    await expectRefused(backupFile(archive), /'d' is a symlink to 'sub\/\.\.', which climbs/);
  });

  it('a file written through a symlink to a directory of the same archive', async () => {
    const archive = tgz([
      replaceA,
      { name: 'real/', type: '5' },
      { name: 'lnk', type: '2', linkname: 'real' },
      { name: 'lnk/f', body: 'through the link' },
    ]);
    await expectRefused(backupFile(archive), /'lnk\/f' goes through the symlink 'lnk'/);
  });

  it.each([
    ['a character device', '3', /is a device file/],
    ['a block device', '4', /is a device file/],
    ['a FIFO', '6', /is a FIFO/],
    ['a sparse file', 'S', /unsupported type/],
    ['an unknown entry type', 'Z', /unsupported type/],
  ])('%s', async (_label, type, reason) => {
    await expectRefused(backupFile(tgz([replaceA, { name: 'special', type }])), reason);
  });

  it('a file entry over the volume root, and a directory and a file at the same path', async () => {
    await expectRefused(backupFile(tgz([replaceA, { name: '.', type: '0', body: 'x' }])), /would replace the volume itself/);
    await expectRefused(
      backupFile(tgz([replaceA, { name: './', type: '2', linkname: 'dir' }])),
      /would replace the volume itself/,
    );
    await expectRefused(
      backupFile(tgz([replaceA, { name: 'x/', type: '5' }, { name: 'x', body: 'file' }])),
      /would replace a directory of the same archive/,
    );
    await expectRefused(
      backupFile(tgz([replaceA, { name: 'x', body: 'file' }, { name: 'x/y', body: 'under a file' }])),
      /to be a directory/,
    );
  });

  it('the first refusal in archive order, even when a later entry is refused sooner', async () => {
    const many = (from: number): RawEntry[] =>
      Array.from({ length: 100 }, (_, i) => ({ name: `many/f${from + i}.txt`, body: randomBytes(2048) }));
    const archive = tgz([
      replaceA,
      { name: 'd/', type: '5' },
      ...many(0),
      // Refused only when its file is opened, in the background, while the next entry is read (and refused sooner).
      { name: 'd', body: 'over the directory' },
      { name: path.join(outside, 'pwned'), body: 'x' },
      ...many(100),
    ]);
    await expectRefused(backupFile(archive), /'d' would replace a directory of the same archive/);
  });

  it('a truncated gzip stream', async () => {
    const { file } = await archiveOf({ 'a.txt': 'new a', 'big.bin': randomBytes(64 * 1024).toString('hex') });
    const whole = fs.readFileSync(file);
    await expectRefused(backupFile(whole.subarray(0, Math.floor(whole.length / 2)), 'cut.tar.gz'), /corrupt/);
    // A gzip stream missing only its 8-byte trailer (CRC and length) is still refused.
    await expectRefused(backupFile(whole.subarray(0, whole.length - 8), 'trailer.tar.gz'), /corrupt/);
  });

  it('garbage bytes, and gzip of garbage', async () => {
    await expectRefused(backupFile(randomBytes(4096), 'garbage.tar.gz'), /corrupt/);
    await expectRefused(backupFile(gzipSync(randomBytes(4096)), 'gzipped-garbage.tar.gz'), /corrupt/);
    await expectRefused(backupFile(Buffer.alloc(0), 'empty-file.tar.gz'), /corrupt|truncated/);
  });

  it('a tar stream cut in the middle of a file, or missing its end-of-archive marker', async () => {
    const tar = rawTar([replaceA, { name: 'big.bin', body: randomBytes(5000) }]);
    await expectRefused(backupFile(gzipSync(tar.subarray(0, 512 * 4)), 'mid-file.tar.gz'), /corrupt|truncated/);
    await expectRefused(backupFile(tgz([replaceA], { end: false }), 'no-end.tar.gz'), /truncated/);
  });

  it('a header with a bad checksum', async () => {
    const tar = rawTar([replaceA, { name: 'b.txt', body: 'b' }]);
    tar[512 * 2 + 10] ^= 0x01; // a byte of the second header's name
    await expectRefused(backupFile(gzipSync(tar), 'checksum.tar.gz'), /corrupt: checksum failure/);
  });
});

describe('restoreArchive restores', () => {
  it('with truncate false: archived files come back and overwrite, the others stay', async () => {
    const { file, sha1: digest } = await archiveOf({ 'a.txt': 'backup a', 'dir/c.txt': 'backup c', 'new/d.txt': 'backup d' });
    await restoreArchive({ archivePath: file, volumeDir: volume, expectedSha1: digest, truncate: false });
    expect(snapshot(volume, { mtimes: false })).toEqual({
      'a.txt': 'file 644 "backup a"',
      'dir/': 'dir 755',
      'dir/b.txt': 'file 644 "original b"',
      'dir/c.txt': 'file 644 "backup c"',
      'keep.txt': 'file 644 "kept"',
      'new/': 'dir 755',
      'new/d.txt': 'file 644 "backup d"',
    });
    expect(stagingLeftovers()).toEqual([]);
  });

  it('with truncate true: the volume becomes exactly the archive, the volume folder itself stays', async () => {
    // The folder keeps its own mode: it was emptied, not replaced (it may be a mount point, or a process's cwd).
    fs.chmodSync(volume, 0o711);
    const inode = fs.statSync(volume).ino;
    const { file, sha1: digest } = await archiveOf({ 'a.txt': 'backup a', 'dir/c.txt': 'backup c', 'empty/': '' });
    await restoreArchive({ archivePath: file, volumeDir: volume, expectedSha1: digest, truncate: true });
    expect(snapshot(volume, { mtimes: false })).toEqual({
      'a.txt': 'file 644 "backup a"',
      'dir/': 'dir 755',
      'dir/c.txt': 'file 644 "backup c"',
      'empty/': 'dir 755',
    });
    expect(fs.statSync(volume).ino).toBe(inode);
    expect(fs.statSync(volume).mode & 0o7777).toBe(0o711);
    expect(stagingLeftovers()).toEqual([]);
  });

  it('round trip: folders, empty folders, modes, unicode and long names, symlinks, hard links, a large file', async () => {
    const source = path.join(root, 'source');
    const large = randomBytes(3 * 1024 * 1024 + 123);
    write(path.join(source, 'start.sh'), '#!/bin/sh\n', 0o755);
    write(path.join(source, 'suid'), 'setuid', 0o4755);
    write(path.join(source, 'private.key'), 'secret', 0o600);
    write(path.join(source, 'world', 'region', 'r.0.0.mca'), large);
    fs.mkdirSync(path.join(source, 'empty', 'deeper'), { recursive: true });
    fs.chmodSync(path.join(source, 'empty'), 0o750);
    write(path.join(source, 'ünïcødé', 'fïlé 名前 🦜.txt'), 'unicode');
    const longDir = path.join(source, 'd'.repeat(120), 'e'.repeat(120));
    write(path.join(longDir, `${'f'.repeat(200)}.txt`), 'long');
    fs.symlinkSync('world/region', path.join(source, 'regions'));
    fs.symlinkSync('dangling-target', path.join(source, 'dangling'));
    write(path.join(source, 'empty-file'), '');
    for (let i = 0; i < 300; i += 1) write(path.join(source, 'many', String(i % 7), `f${i}.txt`), `file ${i}`);
    write(path.join(source, 'hard1'), 'linked');
    fs.linkSync(path.join(source, 'hard1'), path.join(source, 'hard2'));

    const archivePath = path.join(backups, 'round.tar.gz');
    const result = await createArchive({ volumeDir: source, archivePath, ignore: [] });
    const bytes = fs.readFileSync(archivePath);
    expect(result).toEqual({ sha1: sha1(bytes), bytes: bytes.length });
    // GNU tar reads it too.
    const listed = execFileSync('tar', ['-tzf', archivePath], { encoding: 'utf8' }).split('\n').filter(Boolean);
    expect(listed).toContain('ünïcødé/fïlé 名前 🦜.txt');
    expect(listed).toContain(`${'d'.repeat(120)}/${'e'.repeat(120)}/${'f'.repeat(200)}.txt`);
    expect(listed).toContain('hard2');

    const target = path.join(root, 'target');
    fs.mkdirSync(target);
    await restoreArchive({ archivePath, volumeDir: target, expectedSha1: result.sha1, truncate: false });
    const expected = snapshot(source, { mtimes: false });
    expected['suid'] = 'file 755 "setuid"';
    expect(snapshot(target, { mtimes: false })).toEqual(expected);
    expect(fs.statSync(path.join(target, 'start.sh')).mtimeMs).toBe(
      Math.floor(fs.statSync(path.join(source, 'start.sh')).mtimeMs / 1000) * 1000,
    );
    // Hard links come back as two separate files.
    expect(fs.statSync(path.join(target, 'hard1')).ino).not.toBe(fs.statSync(path.join(target, 'hard2')).ino);
  });

  it('an empty volume backup restores (truncate empties the volume)', async () => {
    const empty = path.join(root, 'empty-volume');
    fs.mkdirSync(empty);
    const archivePath = path.join(backups, 'empty.tar.gz');
    const result = await createArchive({ volumeDir: empty, archivePath, ignore: [] });
    await restoreArchive({ archivePath, volumeDir: volume, expectedSha1: result.sha1, truncate: false });
    expect(Object.keys(snapshot(volume))).toEqual(['a.txt', 'dir/', 'dir/b.txt', 'keep.txt']);
    await restoreArchive({ archivePath, volumeDir: volume, expectedSha1: result.sha1, truncate: true });
    expect(fs.readdirSync(volume)).toEqual([]);
  });

  it('a file before its parent directory entry; directory modes; setuid, setgid and sticky bits removed', async () => {
    const archive = tgz([
      { name: 'late/inner/file.txt', body: 'first', mode: 0o6755 },
      { name: 'late/', type: '5', mode: 0o750 },
      { name: 'sticky/', type: '5', mode: 0o1777 },
      { name: 'ro/', type: '5', mode: 0o555 },
      { name: 'ro/file', body: 'in a read-only folder', mode: 0o444 },
    ]);
    await restoreArchive({ archivePath: backupFile(archive), volumeDir: volume, expectedSha1: null, truncate: true });
    expect(snapshot(volume, { mtimes: false })).toEqual({
      'late/': 'dir 750',
      'late/inner/': 'dir 755',
      'late/inner/file.txt': 'file 755 "first"',
      // The owner always keeps rwx on restored folders (docs/RESTORE.md).
      'ro/': 'dir 755',
      'ro/file': 'file 444 "in a read-only folder"',
      'sticky/': 'dir 777',
    });
  });

  it('archives made by GNU tar and node-tar, with a later duplicate entry winning', async () => {
    const source = path.join(root, 'gnu');
    write(path.join(source, 'x'.repeat(150), 'file.txt'), 'gnu long name');
    write(path.join(source, 'plain.txt'), 'plain');
    const gnuArchive = path.join(backups, 'gnu.tar.gz');
    execFileSync('tar', ['-czf', gnuArchive, '--format=gnu', '-C', source, '.']);
    await restoreArchive({ archivePath: gnuArchive, volumeDir: volume, expectedSha1: null, truncate: true });
    expect(snapshot(volume, { mtimes: false })).toEqual({
      'plain.txt': 'file 644 "plain"',
      [`${'x'.repeat(150)}/`]: 'dir 755',
      [`${'x'.repeat(150)}/file.txt`]: 'file 644 "gnu long name"',
    });

    const nodeTarArchive = path.join(backups, 'node-tar.tar.gz');
    await createTar({ gzip: true, file: nodeTarArchive, cwd: source, portable: true }, ['plain.txt']);
    await restoreArchive({ archivePath: nodeTarArchive, volumeDir: volume, expectedSha1: null, truncate: true });
    expect(Object.keys(snapshot(volume))).toEqual(['plain.txt']);

    const duplicate = tgz([
      { name: 'dup.txt', body: 'first' },
      { name: 'dup.txt', body: 'second' },
      { name: 'lnk', type: '2', linkname: 'dup.txt' },
      { name: 'lnk', body: 'a file replaces the earlier symlink' },
    ]);
    await restoreArchive({ archivePath: backupFile(duplicate), volumeDir: volume, expectedSha1: null, truncate: true });
    expect(snapshot(volume, { mtimes: false })).toEqual({
      'dup.txt': 'file 644 "second"',
      lnk: 'file 644 "a file replaces the earlier symlink"',
    });
  });

  it('never follows a symlink the server made in the volume: it is replaced, its target untouched', async () => {
    fs.symlinkSync(outside, path.join(volume, 'data'));
    fs.symlinkSync('../outside', path.join(volume, 'relative'));
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(volume, 'config.yml'));
    fs.symlinkSync(outside, path.join(volume, 'dir', 'nested'));
    const outsideBefore = snapshot(outside);
    const { file, sha1: digest } = await archiveOf({
      'data/file': 'restored into data',
      'relative/secret.txt': 'not the outside secret',
      'config.yml': 'restored config',
      'dir/nested/deeper/f': 'nested',
    });
    for (const truncate of [false, true]) {
      if (truncate) fs.symlinkSync(outside, path.join(volume, 'stale-link'));
      await restoreArchive({ archivePath: file, volumeDir: volume, expectedSha1: digest, truncate });
      expect(snapshot(outside)).toEqual(outsideBefore);
      expect(fs.lstatSync(path.join(volume, 'data')).isDirectory()).toBe(true);
      expect(fs.readFileSync(path.join(volume, 'data', 'file'), 'utf8')).toBe('restored into data');
      expect(fs.readFileSync(path.join(volume, 'relative', 'secret.txt'), 'utf8')).toBe('not the outside secret');
      expect(fs.lstatSync(path.join(volume, 'config.yml')).isFile()).toBe(true);
      expect(fs.lstatSync(path.join(volume, 'dir', 'nested')).isDirectory()).toBe(true);
      expect(fs.existsSync(path.join(volume, 'stale-link'))).toBe(false);
    }
    expect(fs.readdirSync(root).sort()).toEqual(['backups', 'outside', 'volume']);
  });

  it('replaces a directory with a file and a file with a directory', async () => {
    const { file } = await archiveOf({ dir: 'now a file', 'a.txt/inside': 'now a folder' });
    await restoreArchive({ archivePath: file, volumeDir: volume, expectedSha1: null, truncate: false });
    expect(snapshot(volume, { mtimes: false })).toEqual({
      'a.txt/': 'dir 755',
      'a.txt/inside': 'file 644 "now a folder"',
      dir: 'file 644 "now a file"',
      'keep.txt': 'file 644 "kept"',
    });
  });

  it('writes many files at once yet keeps archive order: later duplicates win, whatever is still being written', async () => {
    const small = (i: number): RawEntry => ({ name: `many/${i % 9}/f${i}.txt`, body: `file ${i}` });
    const large = randomBytes(2 * 1024 * 1024 + 7);
    const archive = tgz([
      { name: 'big.bin', body: large },
      { name: 'dup.txt', body: 'first' },
      ...Array.from({ length: 120 }, (_, i) => small(i)),
      // Each of these lands while the earlier entry at its path may still be being written.
      { name: 'big.bin', body: 'the small one wins' },
      { name: 'dup.txt', body: 'second' },
      { name: 'many/3/f3.txt', body: 'rewritten' },
      { name: 'flip', body: 'a file first' },
      { name: 'flip', type: '2', linkname: 'many' },
      { name: 'flop', type: '2', linkname: 'many' },
      { name: 'flop', body: 'a file last', mode: 0o600 },
      ...Array.from({ length: 120 }, (_, i) => small(i + 120)),
    ]);
    await restoreArchive({ archivePath: backupFile(archive), volumeDir: volume, expectedSha1: null, truncate: true });
    const restored = snapshot(volume, { mtimes: false });
    expect(restored['big.bin']).toBe('file 644 "the small one wins"');
    expect(restored['dup.txt']).toBe('file 644 "second"');
    expect(restored['many/3/f3.txt']).toBe('file 644 "rewritten"');
    expect(restored.flip).toBe('symlink -> many');
    expect(restored.flop).toBe('file 600 "a file last"');
    expect(restored['many/7/f232.txt']).toBe('file 644 "file 232"');
    expect(Object.keys(restored).filter((name) => name.startsWith('many/') && !name.endsWith('/'))).toHaveLength(240);
    expect(stagingLeftovers()).toEqual([]);
  });
});
