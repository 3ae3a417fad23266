/**
 * compress and decompress on a real volume: the archive made, the formats
 * unpacked (overwriting files, merging folders, never through a link), and
 * hostile archives refused with the volume unchanged: `../` and absolute
 * names, links pointing out then files written through them, a gzip bomb,
 * a zip bomb lying about its sizes, a zip slip, links inside a zip.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { archiveName } from '../../../../src/daemon/local/files/compress.js';
import { sweepStaleStaging } from '../../../../src/daemon/local/files/decompress.js';
import { rawTar, tgz } from '../archive/tarballs.js';
import { archiveNames } from '../archive/trees.js';
import { makeFilesSandbox, put, refusal, tree, type FilesSandbox } from './helpers.js';
import { buildZip } from './zips.js';

let box: FilesSandbox;
beforeEach(() => {
  box = makeFilesSandbox();
  fs.writeFileSync(path.join(box.outside, 'secret.txt'), 'secret');
});
afterEach(() => box.cleanup());

function outsideUntouched(): void {
  expect(fs.readdirSync(box.outside)).toEqual(['secret.txt']);
  expect(fs.readFileSync(path.join(box.outside, 'secret.txt'), 'utf8')).toBe('secret');
}

/** Nothing but the archive and what was there before; no staging folder left beside the volume. */
function noLeftovers(): void {
  expect(fs.readdirSync(box.volumes).filter((n) => n.startsWith('.decompress-'))).toEqual([]);
}

describe('compress', () => {
  it('packs the named entries into archive-<date>.tar.gz in the folder, links as links', async () => {
    put(box.volume, 'world/level.dat', 'level');
    put(box.volume, 'world/region/r.0.0.mca', 'region');
    put(box.volume, 'server.properties', 'motd=hi');
    put(box.volume, 'other.txt', 'not packed');
    fs.symlinkSync(box.outside, path.join(box.volume, 'world', 'escape'));
    const made = await box.files.compress(box.server, '/', ['world', 'server.properties']);
    expect(made.path).toMatch(/^\/archive-\d{4}-\d{2}-\d{2}T\d{6}\.tar\.gz$/);
    expect(made.entry.isFile).toBe(true);
    const archive = path.join(box.volume, made.path);
    expect(made.entry.size).toBe(fs.statSync(archive).size);
    const names = archiveNames(archive);
    expect(names.map((e) => e.path).sort()).toEqual([
      'server.properties',
      'world/',
      'world/escape',
      'world/level.dat',
      'world/region/',
      'world/region/r.0.0.mca',
    ]);
    expect(names.find((e) => e.path === 'world/escape')!.type).toBe('SymbolicLink');
    expect(execFileSync('tar', ['-xzOf', archive, 'world/level.dat']).toString()).toBe('level');
    expect(tree(box.volume).filter((n) => n.includes('quetzal-upload'))).toEqual([]);
  });

  it('two archives of the same second get distinct names; a missing name is not-found; a bad name is refused', async () => {
    expect(archiveName(new Date('2026-11-26T10:35:25.123Z'), 0)).toBe('archive-2026-11-26T103525.tar.gz');
    expect(archiveName(new Date('2026-11-26T10:35:25.123Z'), 2)).toBe('archive-2026-11-26T103525-2.tar.gz');
    put(box.volume, 'dir/a.txt', 'a');
    const first = await box.files.compress(box.server, 'dir', ['a.txt']);
    const second = await box.files.compress(box.server, 'dir', ['a.txt']);
    expect(first.path.startsWith('/dir/archive-')).toBe(true);
    expect(new Set([first.path, second.path]).size).toBe(2);
    expect((await refusal(box.files.compress(box.server, 'dir', ['missing']))).kind).toBe('not-found');
    expect((await refusal(box.files.compress(box.server, 'dir', ['../x']))).kind).toBe('invalid-path');
    expect((await refusal(box.files.compress(box.server, 'dir', ['a/b']))).kind).toBe('invalid-path');
    expect((await refusal(box.files.compress(box.server, 'dir', []))).kind).toBe('invalid-path');
  });
});

describe('decompress', () => {
  it('unpacks .tar.gz, .tgz, .tar and .zip into the folder, replacing files and merging folders', async () => {
    put(box.volume, 'target/keep.txt', 'kept');
    put(box.volume, 'target/sub/old.txt', 'old');
    put(box.volume, 'target/replace.txt', 'old');
    const entries = [
      { name: 'sub/', type: '5', mode: 0o755 },
      { name: 'sub/new.txt', body: 'new' },
      { name: 'replace.txt', body: 'replaced' },
      { name: 'run.sh', body: '#!/bin/sh', mode: 0o4755 },
    ];
    fs.writeFileSync(path.join(box.volume, 'a.tar.gz'), tgz(entries));
    await box.files.decompress(box.server, 'target', 'a.tar.gz');
    expect(fs.readFileSync(path.join(box.volume, 'target/keep.txt'), 'utf8')).toBe('kept');
    expect(fs.readFileSync(path.join(box.volume, 'target/sub/old.txt'), 'utf8')).toBe('old');
    expect(fs.readFileSync(path.join(box.volume, 'target/sub/new.txt'), 'utf8')).toBe('new');
    expect(fs.readFileSync(path.join(box.volume, 'target/replace.txt'), 'utf8')).toBe('replaced');
    // Never setuid.
    expect(fs.statSync(path.join(box.volume, 'target/run.sh')).mode & 0o7777).toBe(0o755);

    fs.writeFileSync(path.join(box.volume, 'b.tgz'), tgz([{ name: 'tgz.txt', body: 'tgz' }]));
    fs.writeFileSync(path.join(box.volume, 'c.tar'), rawTar([{ name: 'tar.txt', body: 'tar' }]));
    fs.writeFileSync(
      path.join(box.volume, 'd.zip'),
      buildZip([
        { name: 'zipdir/', mode: 0o040755 },
        { name: 'zipdir/zip.txt', body: 'zip'.repeat(100), deflate: true },
        { name: 'replace.txt', body: 'from zip' },
      ]),
    );
    await box.files.decompress(box.server, 'target', 'b.tgz');
    await box.files.decompress(box.server, '/target', '/c.tar');
    await box.files.decompress(box.server, 'target', 'd.zip');
    expect(fs.readFileSync(path.join(box.volume, 'target/tgz.txt'), 'utf8')).toBe('tgz');
    expect(fs.readFileSync(path.join(box.volume, 'target/tar.txt'), 'utf8')).toBe('tar');
    expect(fs.readFileSync(path.join(box.volume, 'target/zipdir/zip.txt'), 'utf8')).toBe('zip'.repeat(100));
    expect(fs.readFileSync(path.join(box.volume, 'target/replace.txt'), 'utf8')).toBe('from zip');
    noLeftovers();
  });

  it('a zip made by the zip tool unpacks', async () => {
    put(box.volume, 'src/a/b.txt', 'deep');
    execFileSync('zip', ['-qr', path.join(box.volume, 'tool.zip'), 'src'], { cwd: box.volume });
    await box.files.decompress(box.server, 'out', 'tool.zip').catch(async (err: unknown) => {
      // The target folder must exist.
      expect((err as { kind: string }).kind).toBe('not-found');
      await box.files.createFolder(box.server, 'out');
      await box.files.decompress(box.server, 'out', 'tool.zip');
    });
    expect(fs.readFileSync(path.join(box.volume, 'out/src/a/b.txt'), 'utf8')).toBe('deep');
  });

  it('an archive entry replaces a link in the volume rather than writing through it', async () => {
    fs.symlinkSync(box.outside, path.join(box.volume, 'escape'));
    fs.writeFileSync(path.join(box.volume, 'a.tar.gz'), tgz([{ name: 'escape/secret.txt', body: 'pwned' }]));
    await box.files.decompress(box.server, '/', 'a.tar.gz');
    outsideUntouched();
    expect(fs.lstatSync(path.join(box.volume, 'escape')).isDirectory()).toBe(true);
    expect(fs.readFileSync(path.join(box.volume, 'escape/secret.txt'), 'utf8')).toBe('pwned');
  });

  it('refuses unknown formats, a link as the archive, a missing one, a folder', async () => {
    put(box.volume, 'notes.rar', 'x');
    fs.symlinkSync('/etc/hostname', path.join(box.volume, 'link.tar.gz'));
    expect((await refusal(box.files.decompress(box.server, '/', 'notes.rar'))).kind).toBe('archive');
    expect((await refusal(box.files.decompress(box.server, '/', 'link.tar.gz'))).kind).toBe('not-a-file');
    expect((await refusal(box.files.decompress(box.server, '/', 'missing.zip'))).kind).toBe('not-found');
    fs.mkdirSync(path.join(box.volume, 'folder.zip'));
    expect((await refusal(box.files.decompress(box.server, '/', 'folder.zip'))).kind).toBe('not-a-file');
  });

  const hostile: Array<[string, string, Buffer]> = [
    [
      'tar with ../',
      'x.tar.gz',
      tgz([
        { name: 'ok.txt', body: 'ok' },
        { name: '../escaped.txt', body: 'x' },
      ]),
    ],
    ['tar with an absolute name', 'x.tar.gz', tgz([{ name: '/tmp/abs.txt', body: 'x' }])],
    ['tar with ../ in a pax path', 'x.tar.gz', tgz([{ name: 'fine.txt', body: 'x', pax: { path: '../../pax.txt' } }])],
    [
      'tar with a link out, then a file written through it',
      'x.tar.gz',
      tgz([
        { name: 'out', type: '2', linkname: '../../outside' },
        { name: 'out/secret.txt', body: 'pwned' },
      ]),
    ],
    [
      'tar with an inside link, then a file written through it',
      'x.tar',
      rawTar([
        { name: 'real/', type: '5' },
        { name: 'via', type: '2', linkname: 'real' },
        { name: 'via/file.txt', body: 'through a link' },
      ]),
    ],
    ['tar with a hard link', 'x.tar.gz', tgz([{ name: 'h', type: '1', linkname: 'etc/passwd' }])],
    ['tar with a device file', 'x.tar.gz', tgz([{ name: 'dev', type: '3' }])],
    ['truncated gzip', 'x.tar.gz', tgz([{ name: 'a.txt', body: 'a'.repeat(5000) }]).subarray(0, 60)],
    [
      'zip slip',
      'x.zip',
      buildZip([
        { name: 'ok.txt', body: 'ok' },
        { name: '../../slip.txt', body: 'x' },
      ]),
    ],
    ['zip with an absolute name', 'x.zip', buildZip([{ name: '/abs.txt', body: 'x' }])],
    ['zip with a symlink', 'x.zip', buildZip([{ name: 'link', body: '/etc', mode: 0o120777 }])],
    [
      'zip bomb lying about its size',
      'x.zip',
      buildZip([{ name: 'bomb.bin', body: Buffer.alloc(8 * 1024 * 1024), deflate: true, declaredSize: 1024 }]),
    ],
    ['not a zip at all', 'x.zip', Buffer.from('PK but not really')],
  ];
  for (const [what, name, bytes] of hostile) {
    it(`refuses a ${what}, changing nothing`, async () => {
      put(box.volume, 'keep.txt', 'kept');
      fs.writeFileSync(path.join(box.volume, name), bytes);
      const before = tree(box.volume);
      const error = await refusal(box.files.decompress(box.server, '/', name));
      expect(error.kind).toBe('archive');
      expect(tree(box.volume)).toEqual(before);
      outsideUntouched();
      expect(fs.existsSync(path.join(box.root, 'escaped.txt'))).toBe(false);
      expect(fs.existsSync(path.join(box.volumes, 'slip.txt'))).toBe(false);
      noLeftovers();
    });
  }

  it('a gzip bomb stops at the disk limit, nothing left behind', async () => {
    const limited = makeFilesSandbox({ limits: { diskMiB: 4 } });
    try {
      // 64 MiB of zeros in one entry: about 64 KiB of gzip.
      const bomb = gzipSync(rawTar([{ name: 'zeros.bin', body: Buffer.alloc(64 * 1024 * 1024) }]));
      expect(bomb.length).toBeLessThan(1024 * 1024);
      fs.writeFileSync(path.join(limited.volume, 'bomb.tar.gz'), bomb);
      const error = await refusal(limited.files.decompress(limited.server, '/', 'bomb.tar.gz'));
      expect(error.kind).toBe('disk-limit');
      expect(tree(limited.volume)).toEqual(['bomb.tar.gz']);
      expect(fs.readdirSync(limited.volumes).filter((n) => n.startsWith('.decompress-'))).toEqual([]);
    } finally {
      limited.cleanup();
    }
  });

  it('a zip bomb with an honest size stops at the disk limit', async () => {
    const limited = makeFilesSandbox({ limits: { diskMiB: 4 } });
    try {
      const bomb = buildZip([{ name: 'zeros.bin', body: Buffer.alloc(32 * 1024 * 1024), deflate: true }]);
      fs.writeFileSync(path.join(limited.volume, 'bomb.zip'), bomb);
      expect((await refusal(limited.files.decompress(limited.server, '/', 'bomb.zip'))).kind).toBe('disk-limit');
      expect(tree(limited.volume)).toEqual(['bomb.zip']);
    } finally {
      limited.cleanup();
    }
  });

  it('staging folders a crash left are swept at start once stale; a running one is kept', async () => {
    const stale = path.join(box.volumes, '.decompress-0011223344556677');
    const running = path.join(box.volumes, '.decompress-8899aabbccddeeff');
    fs.mkdirSync(path.join(stale, 'staged'), { recursive: true });
    fs.writeFileSync(path.join(stale, 'staged', 'half.txt'), 'half');
    fs.mkdirSync(path.join(running, 'staged'), { recursive: true });
    const longAgo = new Date(Date.now() - 7 * 60 * 60 * 1000);
    fs.utimesSync(stale, longAgo, longAgo);
    expect(await sweepStaleStaging(box.volumes)).toBe(1);
    expect(fs.readdirSync(box.volumes).sort()).toEqual(['.decompress-8899aabbccddeeff', box.server.uuid]);
  });
});
