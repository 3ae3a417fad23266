/**
 * The daemon's write gathers a stream's chunks into batches written while
 * the next is read (write-file.ts): the file must still be exactly the bytes
 * sent, in order, across many batches and chunk sizes; and a stream that
 * fails after several batches (one write possibly in flight) must leave the
 * old file and no temporary.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { makeFilesSandbox, type FilesSandbox } from '../daemon/local/files/helpers.js';

const MIB = 1024 * 1024;
let box: FilesSandbox;
afterEach(() => box?.cleanup());

/** `bytes` cut into chunks of irregular sizes (1 B to 300 KiB), delivered asynchronously; optionally failing after `failAfter` bytes. */
function irregular(bytes: Buffer, failAfter = Infinity): Readable {
  let offset = 0;
  let n = 0;
  return new Readable({
    read() {
      setImmediate(() => {
        if (offset >= failAfter) return this.destroy(new Error('client went away'));
        if (offset >= bytes.length) return this.push(null);
        const size = [1, 65536, 300 * 1024, 4096, 17, 1024 * 1024][n++ % 6]!;
        this.push(bytes.subarray(offset, offset + size));
        offset += size;
      });
    },
  });
}

const names = (dir: string) => fs.readdirSync(dir).sort();

describe('a batched write', () => {
  it('writes exactly the bytes sent, across many batches and chunk sizes', async () => {
    box = makeFilesSandbox();
    const content = randomBytes(13 * MIB + 12345);
    const entry = await box.files.writeFile(box.server, 'big.bin', irregular(content));
    expect(entry.size).toBe(content.length);
    expect(fs.readFileSync(path.join(box.volume, 'big.bin')).equals(content)).toBe(true);
    expect(names(box.volume)).toEqual(['big.bin']);
  });

  it('a stream failing after several batches leaves the old file and no temporary', async () => {
    box = makeFilesSandbox();
    fs.writeFileSync(path.join(box.volume, 'big.bin'), 'old');
    const failed = await box.files.writeFile(box.server, 'big.bin', irregular(randomBytes(20 * MIB), 9 * MIB)).then(
      () => null,
      (err: unknown) => err,
    );
    expect(failed).toBeInstanceOf(Error);
    expect(fs.readFileSync(path.join(box.volume, 'big.bin'), 'utf8')).toBe('old');
    expect(names(box.volume)).toEqual(['big.bin']);
  });
});
