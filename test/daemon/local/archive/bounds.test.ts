/**
 * Bounded work (docs/reference/backups-and-restores.md#durability): a restore whose archive would expand past
 * RESTORE_MAX_ENTRIES, the server's disk limit or the free space of the
 * volume's file system fails before anything in the volume changes, and
 * having written next to nothing.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants as zlibConstants, createGzip, gzipSync } from 'node:zlib';
import { Header } from 'tar';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../src/config.js';
import { DEFAULT_MAX_ENTRIES, freeSpaceMargin, type ExtractLimits } from '../../../../src/daemon/local/archive/extract/bounds.js';
import { extractArchive } from '../../../../src/daemon/local/archive/extract/extract-archive.js';
import { restoreArchive } from '../../../../src/daemon/local/archive/restore.js';
import { tgz } from './tarballs.js';
import { makeArchiveSandbox, snapshot } from './trees.js';

const MIB = 1024 * 1024;

let root: string;
let volume: string;
let backups: string;

beforeEach(() => {
  ({ root, volume, backups } = makeArchiveSandbox());
});

afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

/** The whole of the volume and the folder beside it, hashed: any change shows. */
function treeHash(): string {
  return createHash('sha1')
    .update(JSON.stringify([snapshot(volume), fs.readdirSync(root).sort()]))
    .digest('hex');
}

/** Bytes staged under `dir`, by the files' sizes. */
function stagedBytes(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += fs.statSync(path.join(entry.parentPath, entry.name)).size;
  }
  return total;
}

/** Extracts into a fresh staging folder beside the volume, as a restore does; returns the failure and what was staged. */
async function extractBeside(archivePath: string, limits?: ExtractLimits): Promise<{ error: unknown; staged: number }> {
  const staging = path.join(root, 'staging');
  fs.mkdirSync(staging);
  const archive = await fs.promises.open(archivePath, 'r');
  let error: unknown;
  try {
    await extractArchive(archive, staging, limits);
  } catch (err) {
    error = err;
  } finally {
    await archive.close();
  }
  const staged = stagedBytes(staging);
  fs.rmSync(staging, { recursive: true, force: true });
  return { error, staged };
}

/** A complete, valid gzip tarball holding one file of `size` zero bytes: a few hundred KiB on disk. */
async function zeroFileArchive(file: string, size: number): Promise<void> {
  const header = new Header({ path: 'zeros.bin', type: 'File', size, mode: 0o644, mtime: new Date(), uid: 0, gid: 0 });
  header.encode();
  const chunk = Buffer.alloc(MIB);
  async function* tar(): AsyncGenerator<Buffer> {
    yield header.block!;
    for (let left = size; left > 0; left -= chunk.length) yield left >= chunk.length ? chunk : chunk.subarray(0, left);
    yield Buffer.alloc((512 - (size % 512)) % 512);
    yield Buffer.alloc(1024);
  }
  await pipeline(Readable.from(tar()), createGzip({ level: zlibConstants.Z_BEST_SPEED }), fs.createWriteStream(file));
}

describe('restore bounds', () => {
  it('refuses an archive with more entries than the limit, and accepts one at the limit', async () => {
    const entries = Array.from({ length: 11 }, (_, i) => ({ name: `f${i}.txt`, body: `file ${i}` }));
    const archivePath = path.join(backups, 'many.tar.gz');
    fs.writeFileSync(archivePath, tgz(entries));
    const before = treeHash();

    const refused = await extractBeside(archivePath, { maxEntries: 10 });
    expect(refused.error).toMatchObject({ name: 'RestoreError' });
    expect((refused.error as Error).message).toMatch(/more than 10 entries \(RESTORE_MAX_ENTRIES\).*'f10\.txt'/);
    expect(treeHash()).toBe(before);

    const accepted = await extractBeside(archivePath, { maxEntries: 11 });
    expect(accepted.error).toBeUndefined();
    expect(accepted.staged).toBe(entries.reduce((sum, e) => sum + e.body.length, 0));
  });

  it('refuses a small archive that expands past the disk limit, before writing the file', async () => {
    const archivePath = path.join(backups, 'zeros.tar.gz');
    await zeroFileArchive(archivePath, 200 * MIB);
    expect(fs.statSync(archivePath).size).toBeLessThan(2 * MIB);
    const before = treeHash();

    const refused = await extractBeside(archivePath, { maxBytes: 100 * MIB });
    expect(refused.error).toMatchObject({ name: 'RestoreError' });
    expect((refused.error as Error).message).toMatch(/expands past the server's disk limit of 100\.0 MiB \(at 'zeros\.bin'/);
    expect(refused.staged).toBe(0);
    expect(treeHash()).toBe(before);

    // A limit of 0 is docs/reference/containment.md's "unlimited"; just above the size passes too.
    expect((await extractBeside(archivePath, { maxBytes: 0 })).error).toBeUndefined();
    expect((await extractBeside(archivePath, { maxBytes: 200 * MIB })).error).toBeUndefined();
  });

  it('counts a sparse file at its full size', async () => {
    const sparse = path.join(root, 'sparse-source');
    fs.mkdirSync(sparse);
    // 1 GiB that takes no disk: the archive stores it as its full contents, and a restore would write them.
    fs.closeSync(fs.openSync(path.join(sparse, 'hole.bin'), 'w'));
    fs.truncateSync(path.join(sparse, 'hole.bin'), 1024 * MIB);
    const archivePath = path.join(backups, 'sparse.tar.gz');
    // Only the header matters: the refusal comes before the body is read.
    const header = new Header({
      path: 'hole.bin',
      type: 'File',
      size: fs.statSync(path.join(sparse, 'hole.bin')).size,
      mode: 0o644,
    });
    header.encode();
    fs.writeFileSync(archivePath, gzipSync(Buffer.concat([header.block!, Buffer.alloc(64 * 1024)])));
    const before = treeHash();
    const refused = await extractBeside(archivePath, { maxBytes: 100 * MIB });
    expect((refused.error as Error).message).toMatch(/disk limit of 100\.0 MiB \(at 'hole\.bin', 1024\.0 MiB so far\)/);
    expect(refused.staged).toBe(0);
    expect(treeHash()).toBe(before);
  });

  it('refuses an archive that would leave less than the margin free on the file system, volume untouched', async () => {
    const space = fs.statfsSync(root);
    const free = space.bavail * space.bsize;
    const margin = freeSpaceMargin(space.blocks * space.bsize);
    expect(margin).toBeGreaterThanOrEqual(256 * MIB);
    // Less than what is free, but eating into the margin by half of it: refused all the same.
    const claimed = free - Math.floor(margin / 2);
    const archivePath = path.join(backups, 'claims.tar.gz');
    fs.writeFileSync(
      archivePath,
      tgz(
        [
          { name: 'kept-small.txt', body: 'x' },
          { name: 'huge.bin', pax: { size: String(claimed) } },
        ],
        { end: false },
      ),
    );
    const before = treeHash();
    await expect(restoreArchive({ archivePath, volumeDir: volume, expectedSha1: null, truncate: true })).rejects.toThrow(
      /expands past the free space of the volume's file system \(at 'huge\.bin'.*keeping \d+\.\d MiB free\)/,
    );
    expect(treeHash()).toBe(before);
  });

  it('RESTORE_MAX_ENTRIES is read from the environment, 1,000,000 by default', () => {
    expect(loadConfig({}).restoreMaxEntries).toBe(DEFAULT_MAX_ENTRIES);
    expect(DEFAULT_MAX_ENTRIES).toBe(1_000_000);
    expect(loadConfig({ RESTORE_MAX_ENTRIES: '5000' }).restoreMaxEntries).toBe(5000);
    expect(() => loadConfig({ RESTORE_MAX_ENTRIES: '0' })).toThrow(/RESTORE_MAX_ENTRIES/);
    expect(() => loadConfig({ RESTORE_MAX_ENTRIES: 'many' })).toThrow(/RESTORE_MAX_ENTRIES/);
  });
});
