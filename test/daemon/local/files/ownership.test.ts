/**
 * Files the service writes into a confined server's volume belong to the
 * server's uid (docs/reference/containment.md, docs/reference/files-and-sftp.md), whichever operation made them; unconfined
 * (no owner), they stay the service's. Needs root (chown).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeFilesSandbox, put, type FilesSandbox } from './helpers.js';
import { buildZip } from './zips.js';
import { tgz } from '../archive/tarballs.js';

const UID = 54321;
let box: FilesSandbox;
beforeEach(() => {
  if (process.getuid?.() !== 0) throw new Error('these tests need root: they check chown');
  box = makeFilesSandbox({ owner: { uid: UID, gid: UID } });
});
afterEach(() => box.cleanup());

function ownerOf(relative: string): number {
  return fs.lstatSync(path.join(box.volume, relative)).uid;
}

describe("created files belong to the server's uid", () => {
  it('writeFile (and the folders it makes), createFolder, copy, compress, decompress, SFTP create, rename destination folders', async () => {
    await box.files.writeFile(box.server, 'new/deep/a.txt', Readable.from([Buffer.from('a')]));
    await box.files.createFolder(box.server, 'made/here');
    const copy = await box.files.copy(box.server, 'new/deep/a.txt');
    const archive = await box.files.compress(box.server, 'new', ['deep']);
    fs.writeFileSync(path.join(box.volume, 'x.tar.gz'), tgz([{ name: 'from-tar/t.txt', body: 't' }]));
    fs.writeFileSync(path.join(box.volume, 'x.zip'), buildZip([{ name: 'from-zip/z.txt', body: 'z' }]));
    await box.files.decompress(box.server, '/', 'x.tar.gz');
    await box.files.decompress(box.server, '/', 'x.zip');
    const handle = await box.files.open(
      box.server,
      's.txt',
      { read: false, write: true, append: false, create: true, truncate: false, exclusive: false },
      0o600,
    );
    await handle.close();
    put(box.volume, 'service.txt', 'written by root');
    await box.files.rename(box.server, 'service.txt', 'moved/to/service.txt');
    for (const made of [
      'new',
      'new/deep',
      'new/deep/a.txt',
      'made',
      'made/here',
      copy.slice(1),
      archive.path.slice(1),
      'from-tar',
      'from-tar/t.txt',
      'from-zip',
      'from-zip/z.txt',
      's.txt',
      'moved',
      'moved/to',
    ]) {
      expect([made, ownerOf(made)]).toEqual([made, UID]);
    }
    expect(fs.statSync(path.join(box.volume, 's.txt')).mode & 0o777).toBe(0o600);
    // A move keeps the entry's owner; the service does not give away what it did not make.
    expect(ownerOf('moved/to/service.txt')).toBe(0);
  });

  it('a replaced file is owned by the server too', async () => {
    put(box.volume, 'cfg.txt', 'old');
    fs.chownSync(path.join(box.volume, 'cfg.txt'), 0, 0);
    await box.files.writeFile(box.server, 'cfg.txt', Buffer.from('new'));
    expect(ownerOf('cfg.txt')).toBe(UID);
  });

  it('unconfined: files stay the service user', async () => {
    const plain = makeFilesSandbox();
    try {
      await plain.files.writeFile(plain.server, 'a.txt', Buffer.from('a'));
      expect(fs.lstatSync(path.join(plain.volume, 'a.txt')).uid).toBe(process.getuid!());
    } finally {
      plain.cleanup();
    }
  });
});
