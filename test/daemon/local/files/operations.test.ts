/**
 * Every operation of LocalFiles on a real volume folder: what it does, and
 * each way it refuses (a VolumeFileError of the right kind, nothing changed).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { copyName } from '../../../../src/daemon/local/files/copy-name.js';
import { makeFilesSandbox, put, refusal, tree, type FilesSandbox } from './helpers.js';

let box: FilesSandbox;
beforeEach(() => {
  box = makeFilesSandbox();
  put(box.volume, 'a.txt', 'hello');
  put(box.volume, 'dir/b.txt', 'bee');
  fs.writeFileSync(path.join(box.outside, 'secret.txt'), 'secret');
  fs.symlinkSync(box.outside, path.join(box.volume, 'out'));
  fs.symlinkSync(path.join(box.outside, 'secret.txt'), path.join(box.volume, 'secret-link'));
});
afterEach(() => box.cleanup());

const flags = (over: Partial<Record<'read' | 'write' | 'append' | 'create' | 'truncate' | 'exclusive', boolean>>) => ({
  read: false,
  write: false,
  append: false,
  create: false,
  truncate: false,
  exclusive: false,
  ...over,
});

describe('paths', () => {
  it('a leading / is the volume root; .. , NUL and empty paths are refused', async () => {
    expect((await box.files.stat(box.server, '/a.txt')).size).toBe(5);
    expect((await box.files.stat(box.server, 'dir//./b.txt')).name).toBe('b.txt');
    for (const bad of ['../x', 'dir/../../x', 'a\0b', 'x'.repeat(300)]) {
      expect((await refusal(box.files.stat(box.server, bad))).kind).toBe('invalid-path');
    }
    expect((await refusal(box.files.list(box.server, '..'))).kind).toBe('invalid-path');
    for (const root of ['', '/', '.'])
      expect((await refusal(box.files.readFile(box.server, root, 10))).kind).toBe('invalid-path');
  });

  it('a link on the way is refused; a file on the way is not-a-directory; absent is not-found', async () => {
    expect((await refusal(box.files.stat(box.server, 'out/secret.txt'))).kind).toBe('invalid-path');
    expect((await refusal(box.files.list(box.server, 'out'))).kind).toBe('invalid-path');
    expect((await refusal(box.files.stat(box.server, 'a.txt/x'))).kind).toBe('not-a-directory');
    expect((await refusal(box.files.stat(box.server, 'nope/x'))).kind).toBe('not-found');
    expect((await refusal(box.files.stat(box.server, 'nope'))).kind).toBe('not-found');
    expect((await refusal(box.files.list(box.server, 'a.txt'))).kind).toBe('not-a-directory');
  });

  it('a missing volume is not-found', async () => {
    fs.rmSync(box.volume, { recursive: true });
    expect((await refusal(box.files.list(box.server, '/'))).kind).toBe('not-found');
  });
});

describe('list and stat', () => {
  it('lists every entry with its type; a link is reported as a link', async () => {
    const entries = await box.files.list(box.server, '/');
    const byName = Object.fromEntries(entries.map((e) => [e.name, e]));
    expect(Object.keys(byName).sort()).toEqual(['a.txt', 'dir', 'out', 'secret-link']);
    expect(byName['a.txt']).toMatchObject({ isFile: true, isDirectory: false, isSymlink: false, size: 5 });
    expect(byName['dir']).toMatchObject({ isDirectory: true });
    expect(byName['out']).toMatchObject({ isSymlink: true, isDirectory: false, size: box.outside.length });
    expect(byName['a.txt']!.modifiedAt).toBeInstanceOf(Date);
    expect((await box.files.stat(box.server, 'secret-link')).isSymlink).toBe(true);
  });

  it('stat of the root is the volume folder itself', async () => {
    const root = await box.files.stat(box.server, '/');
    expect(root).toMatchObject({ name: '/', isDirectory: true, isSymlink: false });
  });

  it('sweeps temporary files of writes a crash cut short before this start, keeps young ones', async () => {
    const stale = put(box.volume, 'dir/.quetzal-upload-0123456789abcdef01234567.tmp', 'half');
    fs.utimesSync(stale, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    put(box.volume, 'dir/.quetzal-upload-aaaaaaaaaaaaaaaaaaaaaaaa.tmp', 'running');
    const future = new Date(Date.now() + 60_000);
    fs.utimesSync(path.join(box.volume, 'dir/.quetzal-upload-aaaaaaaaaaaaaaaaaaaaaaaa.tmp'), future, future);
    const names = (await box.files.list(box.server, 'dir')).map((e) => e.name).sort();
    expect(names).toEqual(['.quetzal-upload-aaaaaaaaaaaaaaaaaaaaaaaa.tmp', 'b.txt']);
    expect(fs.existsSync(stale)).toBe(false);
  });
});

describe('reading', () => {
  it('reads a file whole, refuses one over maxBytes, a folder and a link', async () => {
    expect((await box.files.readFile(box.server, 'a.txt', 5)).toString()).toBe('hello');
    expect((await refusal(box.files.readFile(box.server, 'a.txt', 4))).kind).toBe('too-large');
    expect((await refusal(box.files.readFile(box.server, 'dir', 100))).kind).toBe('not-a-file');
    expect((await refusal(box.files.readFile(box.server, 'secret-link', 100))).kind).toBe('not-a-file');
    expect((await refusal(box.files.readFile(box.server, 'missing', 100))).kind).toBe('not-found');
  });

  it('a FIFO is refused without hanging, for reading and writing', async () => {
    const { execFileSync } = await import('node:child_process');
    execFileSync('mkfifo', [path.join(box.volume, 'pipe')]);
    expect((await refusal(box.files.readFile(box.server, 'pipe', 100))).kind).toBe('not-a-file');
    expect((await refusal(box.files.open(box.server, 'pipe', flags({ write: true })))).kind).toBe('not-a-file');
    expect((await refusal(box.files.open(box.server, 'pipe', flags({ read: true })))).kind).toBe('not-a-file');
    expect((await refusal(box.files.writeFile(box.server, 'pipe', Buffer.from('x')))).kind).toBe('not-a-file');
  });

  it('streams a file with its entry; refuses a link', async () => {
    const { entry, stream } = await box.files.openRead(box.server, 'dir/b.txt');
    expect(entry.size).toBe(3);
    expect(await text(stream)).toBe('bee');
    expect((await refusal(box.files.openRead(box.server, 'secret-link'))).kind).toBe('not-a-file');
  });
});

describe('writing', () => {
  it('creates a file (and missing folders) 0644, replaces one keeping its mode', async () => {
    await box.files.writeFile(box.server, 'new/deep/c.txt', Buffer.from('sea'));
    expect(fs.readFileSync(path.join(box.volume, 'new/deep/c.txt'), 'utf8')).toBe('sea');
    expect(fs.statSync(path.join(box.volume, 'new/deep/c.txt')).mode & 0o777).toBe(0o644);
    expect(fs.statSync(path.join(box.volume, 'new/deep')).mode & 0o777).toBe(0o755);
    fs.chmodSync(path.join(box.volume, 'a.txt'), 0o600);
    const entry = await box.files.writeFile(box.server, 'a.txt', Readable.from([Buffer.from('new '), Buffer.from('text')]));
    expect(entry.size).toBe(8);
    expect(fs.readFileSync(path.join(box.volume, 'a.txt'), 'utf8')).toBe('new text');
    expect(fs.statSync(path.join(box.volume, 'a.txt')).mode & 0o777).toBe(0o600);
    expect(tree(box.volume).filter((n) => n.includes('quetzal-upload'))).toEqual([]);
  });

  it('refuses to write through a link or over a folder, and leaves no temporary file', async () => {
    expect((await refusal(box.files.writeFile(box.server, 'secret-link', Buffer.from('x')))).kind).toBe('not-a-file');
    expect((await refusal(box.files.writeFile(box.server, 'dir', Buffer.from('x')))).kind).toBe('not-a-file');
    expect((await refusal(box.files.writeFile(box.server, 'out/new.txt', Buffer.from('x')))).kind).toBe('invalid-path');
    expect(fs.readFileSync(path.join(box.outside, 'secret.txt'), 'utf8')).toBe('secret');
    expect(fs.readdirSync(box.outside)).toEqual(['secret.txt']);
    expect(tree(box.volume).filter((n) => n.includes('quetzal-upload'))).toEqual([]);
  });

  it('a stream that fails half way leaves the old file and no temporary', async () => {
    const failing = new Readable({
      read() {
        this.push(Buffer.from('partial'));
        this.destroy(new Error('client went away'));
      },
    });
    await expect(box.files.writeFile(box.server, 'a.txt', failing)).rejects.toThrow(/client went away/);
    expect(fs.readFileSync(path.join(box.volume, 'a.txt'), 'utf8')).toBe('hello');
    expect(tree(box.volume).filter((n) => n.includes('quetzal-upload'))).toEqual([]);
  });
});

describe('folders, rename, copy, delete, chmod', () => {
  it('creates a folder (and parents); exists when taken', async () => {
    await box.files.createFolder(box.server, 'x/y');
    expect(fs.statSync(path.join(box.volume, 'x/y')).isDirectory()).toBe(true);
    expect((await refusal(box.files.createFolder(box.server, 'x/y'))).kind).toBe('exists');
    expect((await refusal(box.files.createFolder(box.server, 'a.txt'))).kind).toBe('exists');
    expect((await refusal(box.files.createFolder(box.server, 'out/new'))).kind).toBe('invalid-path');
    expect(fs.readdirSync(box.outside)).toEqual(['secret.txt']);
  });

  it('renames files, folders and links (the link itself), never replacing', async () => {
    await box.files.rename(box.server, 'a.txt', 'moved/a2.txt');
    expect(fs.readFileSync(path.join(box.volume, 'moved/a2.txt'), 'utf8')).toBe('hello');
    expect(fs.existsSync(path.join(box.volume, 'a.txt'))).toBe(false);
    await box.files.rename(box.server, 'dir', 'dir2');
    expect(fs.readFileSync(path.join(box.volume, 'dir2/b.txt'), 'utf8')).toBe('bee');
    await box.files.rename(box.server, 'out', 'out2');
    expect(fs.lstatSync(path.join(box.volume, 'out2')).isSymbolicLink()).toBe(true);
    expect((await refusal(box.files.rename(box.server, 'moved/a2.txt', 'dir2/b.txt'))).kind).toBe('exists');
    expect((await refusal(box.files.rename(box.server, 'dir2', 'moved'))).kind).toBe('exists');
    expect((await refusal(box.files.rename(box.server, 'nope', 'new/folders/x'))).kind).toBe('not-found');
    expect(fs.existsSync(path.join(box.volume, 'new'))).toBe(false);
    expect((await refusal(box.files.rename(box.server, 'dir2', 'dir2/inside'))).kind).toBe('invalid-path');
    expect((await refusal(box.files.rename(box.server, 'dir2', 'dir2/made/for/it'))).kind).toBe('invalid-path');
    expect(fs.readdirSync(path.join(box.volume, 'dir2'))).toEqual(['b.txt']);
    expect((await refusal(box.files.rename(box.server, 'moved/a2.txt', 'out2/x'))).kind).toBe('invalid-path');
    expect(fs.readdirSync(box.outside)).toEqual(['secret.txt']);
  });

  it('copies with Pterodactyl naming, only regular files', async () => {
    put(box.volume, 'pack.tar.gz', 'tgz');
    expect(await box.files.copy(box.server, 'dir/b.txt')).toBe('/dir/b copy.txt');
    expect(await box.files.copy(box.server, 'dir/b.txt')).toBe('/dir/b copy 1.txt');
    expect(await box.files.copy(box.server, 'dir/b.txt')).toBe('/dir/b copy 2.txt');
    expect(await box.files.copy(box.server, 'pack.tar.gz')).toBe('/pack copy.tar.gz');
    expect(fs.readFileSync(path.join(box.volume, 'dir/b copy 1.txt'), 'utf8')).toBe('bee');
    expect(copyName('README', 0)).toBe('README copy');
    expect(copyName('.bashrc', 1)).toBe('.bashrc copy 1');
    expect((await refusal(box.files.copy(box.server, 'dir'))).kind).toBe('not-a-file');
    expect((await refusal(box.files.copy(box.server, 'secret-link'))).kind).toBe('not-a-file');
  });

  it('deletes entries (a link itself), skips absent ones, refuses bad paths before deleting anything', async () => {
    expect((await refusal(box.files.delete(box.server, ['a.txt', '../x']))).kind).toBe('invalid-path');
    expect(fs.existsSync(path.join(box.volume, 'a.txt'))).toBe(true);
    expect((await refusal(box.files.delete(box.server, ['out/secret.txt']))).kind).toBe('invalid-path');
    expect((await refusal(box.files.delete(box.server, ['/']))).kind).toBe('invalid-path');
    // A leading `/` is the volume's root, as for every other operation.
    await box.files.delete(box.server, ['/a.txt', 'dir', 'out', 'missing']);
    expect(tree(box.volume)).toEqual(['secret-link']);
    expect(fs.readdirSync(box.outside)).toEqual(['secret.txt']);
  });

  it('chmod sets 0..0o777 on files and folders, refuses more and refuses links', async () => {
    await box.files.chmod(box.server, 'a.txt', 0o600);
    expect(fs.statSync(path.join(box.volume, 'a.txt')).mode & 0o7777).toBe(0o600);
    await box.files.chmod(box.server, 'dir', 0o750);
    expect(fs.statSync(path.join(box.volume, 'dir')).mode & 0o7777).toBe(0o750);
    for (const bad of [0o4755, 0o1777, -1, 1.5, 0o1000]) {
      expect((await refusal(box.files.chmod(box.server, 'a.txt', bad))).kind).toBe('invalid-path');
    }
    const before = fs.statSync(path.join(box.outside, 'secret.txt')).mode;
    expect((await refusal(box.files.chmod(box.server, 'secret-link', 0o777))).kind).toBe('invalid-path');
    expect(fs.statSync(path.join(box.outside, 'secret.txt')).mode).toBe(before);
    expect((await refusal(box.files.chmod(box.server, 'missing', 0o644))).kind).toBe('not-found');
  });
});

describe('SFTP handles', () => {
  it('creates, writes, reads, appends, truncates', async () => {
    const handle = await box.files.open(box.server, 'dir/s.txt', flags({ write: true, create: true, read: true }), 0o4640);
    await handle.write(Buffer.from('hello world'), 0);
    await handle.write(Buffer.from('W'), 6);
    const buffer = Buffer.alloc(20);
    expect(buffer.subarray(0, await handle.read(buffer, 0)).toString()).toBe('hello World');
    expect(await handle.read(buffer, 100)).toBe(0);
    expect((await handle.stat()).size).toBe(11);
    await handle.close();
    expect(fs.statSync(path.join(box.volume, 'dir/s.txt')).mode & 0o7777).toBe(0o640);
    const appending = await box.files.open(box.server, 'dir/s.txt', flags({ append: true }));
    await appending.write(Buffer.from('!'), 0);
    await appending.close();
    expect(fs.readFileSync(path.join(box.volume, 'dir/s.txt'), 'utf8')).toBe('hello World!');
    const truncating = await box.files.open(box.server, 'dir/s.txt', flags({ write: true, truncate: true }));
    await truncating.close();
    expect(fs.readFileSync(path.join(box.volume, 'dir/s.txt'), 'utf8')).toBe('');
  });

  it('a handle refuses reads it was not opened for, and writes likewise', async () => {
    const reading = await box.files.open(box.server, 'a.txt', flags({ read: true }));
    expect((await refusal(reading.write(Buffer.from('x'), 0))).kind).toBe('invalid-path');
    await reading.close();
    const writing = await box.files.open(box.server, 'a.txt', flags({ write: true }));
    expect((await refusal(writing.read(Buffer.alloc(4), 0))).kind).toBe('invalid-path');
    await writing.close();
    expect(fs.readFileSync(path.join(box.volume, 'a.txt'), 'utf8')).toBe('hello');
  });

  it('exclusive create of an existing file is exists; a link, a folder or a missing file are refused', async () => {
    expect((await refusal(box.files.open(box.server, 'a.txt', flags({ write: true, create: true, exclusive: true })))).kind).toBe(
      'exists',
    );
    expect((await refusal(box.files.open(box.server, 'secret-link', flags({ read: true })))).kind).toBe('not-a-file');
    expect((await refusal(box.files.open(box.server, 'secret-link', flags({ write: true, create: true })))).kind).toBe(
      'not-a-file',
    );
    expect((await refusal(box.files.open(box.server, 'dir', flags({ read: true })))).kind).toBe('not-a-file');
    expect((await refusal(box.files.open(box.server, 'missing', flags({ read: true })))).kind).toBe('not-found');
    expect(fs.readFileSync(path.join(box.outside, 'secret.txt'), 'utf8')).toBe('secret');
  });
});

describe('backup archives', () => {
  it('opens a backup archive by uuid; not-found when absent', async () => {
    fs.writeFileSync(path.join(box.backups, 'b-1.tar.gz'), 'archive bytes');
    const { bytes, stream } = await box.files.openBackup(box.server, 'b-1');
    expect(bytes).toBe(13);
    expect(await text(stream)).toBe('archive bytes');
    expect((await refusal(box.files.openBackup(box.server, 'b-2'))).kind).toBe('not-found');
    expect((await refusal(box.files.openBackup(box.server, '../x'))).kind).toBe('not-found');
  });
});
