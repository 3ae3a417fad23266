/**
 * Every byte the files layer adds counts against the server's disk limit
 * (docs/reference/containment.md, docs/reference/files-and-sftp.md): writes announced and streamed, copies, compress, SFTP
 * handle growth, and concurrent writes to one server together; the inode
 * limit as well. Refusals leave nothing written.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { makeFilesSandbox, put, refusal, tree, type FilesSandbox } from './helpers.js';

const MIB = 1024 * 1024;
let box: FilesSandbox;
afterEach(() => box.cleanup());

function temporaries(): string[] {
  return tree(box.volume).filter((n) => n.includes('quetzal-upload'));
}

/** A stream of `chunks` MiB, counting how many were pulled. */
function mebibytes(chunks: number): Readable & { pulled: number } {
  let sent = 0;
  const stream = new Readable({
    read() {
      if (sent === chunks) return void this.push(null);
      sent++;
      (stream as Readable & { pulled: number }).pulled = sent;
      this.push(Buffer.alloc(MIB, 1));
    },
  }) as Readable & { pulled: number };
  stream.pulled = 0;
  return stream;
}

describe('the disk limit', () => {
  it('an announced size over the limit is refused before a byte is read', async () => {
    box = makeFilesSandbox({ limits: { diskMiB: 2 } });
    const stream = mebibytes(3);
    const error = await refusal(box.files.writeFile(box.server, 'big.bin', stream, { expectedBytes: 3 * MIB }));
    expect(error.kind).toBe('disk-limit');
    expect(error.message).toMatch(/disk limit of 2 MiB/);
    expect(stream.pulled).toBe(0);
    expect(tree(box.volume)).toEqual([]);
  });

  it('a stream is cut at the chunk that would pass the limit, its temporary removed, the old file kept', async () => {
    box = makeFilesSandbox({ limits: { diskMiB: 2 } });
    put(box.volume, 'big.bin', 'old');
    const error = await refusal(box.files.writeFile(box.server, 'big.bin', mebibytes(5)));
    expect(error.kind).toBe('disk-limit');
    expect(fs.readFileSync(path.join(box.volume, 'big.bin'), 'utf8')).toBe('old');
    expect(temporaries()).toEqual([]);
  });

  it('a stream that lies (announces less than it sends) is cut too, and the folders made for it go', async () => {
    box = makeFilesSandbox({ limits: { diskMiB: 2 } });
    put(box.volume, 'kept/x.txt', 'x');
    const error = await refusal(box.files.writeFile(box.server, 'kept/new/deeper/big.bin', mebibytes(4), { expectedBytes: 10 }));
    expect(error.kind).toBe('disk-limit');
    expect(tree(box.volume)).toEqual(['kept', 'kept/x.txt']);
  });

  it('within the limit, writes succeed; concurrent writes to one server cannot together pass it', async () => {
    box = makeFilesSandbox({ limits: { diskMiB: 4 } });
    await box.files.writeFile(box.server, 'one.bin', Buffer.alloc(MIB));
    // Three more MiB-and-a-half writes at once: only one fits in what is left.
    const results = await Promise.allSettled(
      ['a', 'b', 'c'].map((name) => box.files.writeFile(box.server, `${name}.bin`, mebibytes(2), { expectedBytes: 2 * MIB })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason.kind)).toEqual([
      'disk-limit',
      'disk-limit',
    ]);
    expect(temporaries()).toEqual([]);
  });

  it('counts what was written since the last measurement (no walk per write)', async () => {
    box = makeFilesSandbox({ limits: { diskMiB: 3 } });
    await box.files.writeFile(box.server, 'a.bin', Buffer.alloc(MIB));
    await box.files.writeFile(box.server, 'b.bin', Buffer.alloc(MIB));
    expect((await refusal(box.files.writeFile(box.server, 'c.bin', Buffer.alloc(MIB + 1)))).kind).toBe('disk-limit');
    // One walk served all three.
    expect(box.measurements).toBe(1);
  });

  it('copy counts the copy', async () => {
    box = makeFilesSandbox({ limits: { diskMiB: 2 } });
    put(box.volume, 'a.bin', Buffer.alloc(1.5 * MIB));
    expect((await refusal(box.files.copy(box.server, 'a.bin'))).kind).toBe('disk-limit');
    expect(tree(box.volume)).toEqual(['a.bin']);
  });

  it('compress counts the archive as it is written, and removes it when it passes', async () => {
    box = makeFilesSandbox({ limits: { diskMiB: 3 } });
    // 2 MiB of random bytes: gzip cannot shrink them, so the archive needs 2 more MiB.
    put(box.volume, 'random.bin', Buffer.from(Array.from({ length: 2 * MIB }, () => Math.floor(Math.random() * 256))));
    expect((await refusal(box.files.compress(box.server, '/', ['random.bin']))).kind).toBe('disk-limit');
    expect(tree(box.volume)).toEqual(['random.bin']);
  });

  it('decompress within the limit succeeds and is counted', async () => {
    box = makeFilesSandbox({ limits: { diskMiB: 3 } });
    put(box.volume, 'a.bin', Buffer.alloc(MIB));
    await box.files.compress(box.server, '/', ['a.bin']);
    const archive = tree(box.volume).find((n) => n.startsWith('archive-'))!;
    fs.mkdirSync(path.join(box.volume, 'x'));
    await box.files.decompress(box.server, 'x', archive);
    expect(fs.statSync(path.join(box.volume, 'x/a.bin')).size).toBe(MIB);
    // 2 MiB and more now: another MiB does not fit.
    expect((await refusal(box.files.writeFile(box.server, 'c.bin', Buffer.alloc(MIB)))).kind).toBe('disk-limit');
    fs.mkdirSync(path.join(box.volume, 'y'));
    expect((await refusal(box.files.decompress(box.server, 'y', archive))).kind).toBe('disk-limit');
    expect(fs.readdirSync(path.join(box.volume, 'y'))).toEqual([]);
  });

  it('SFTP writes count growth past the file size; overwrites inside it are free', async () => {
    box = makeFilesSandbox({ limits: { diskMiB: 2 } });
    const handle = await box.files.open(box.server, 'f.bin', {
      read: false,
      write: true,
      append: false,
      create: true,
      truncate: false,
      exclusive: false,
    });
    try {
      await handle.write(Buffer.alloc(MIB), 0);
      await handle.write(Buffer.alloc(MIB), 0);
      const error = await refusal(handle.write(Buffer.alloc(MIB + 1), MIB));
      expect(error.kind).toBe('disk-limit');
      expect((await handle.stat()).size).toBe(MIB);
    } finally {
      await handle.close();
    }
  });

  it('the inode limit counts new files and folders', async () => {
    box = makeFilesSandbox({ limits: { diskMiB: 0, inodes: 4 } });
    // The volume folder itself is one.
    await box.files.createFolder(box.server, 'a');
    await box.files.writeFile(box.server, 'a/b.txt', Buffer.from('b'));
    await box.files.writeFile(box.server, 'c.txt', Buffer.from('c'));
    expect((await refusal(box.files.writeFile(box.server, 'd.txt', Buffer.from('d')))).kind).toBe('disk-limit');
    expect((await refusal(box.files.createFolder(box.server, 'e'))).kind).toBe('disk-limit');
  });

  it('no limit: nothing is measured', async () => {
    box = makeFilesSandbox();
    await box.files.writeFile(box.server, 'a.bin', Buffer.alloc(MIB));
    await box.files.copy(box.server, 'a.bin');
    expect(box.measurements).toBe(0);
  });
});
