/**
 * A volume's measured size (SPEC 10's disk limit): apparent sizes of regular
 * files, each inode once, no link followed even while the server's process
 * swaps a folder for one; and the cache that shares walks.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DiskUsageCache, MAX_DEPTH, measureDiskUsage } from '../../../../src/daemon/local/volume/disk-usage.js';
import { SMALL_FILES, startLinkSwapper, stopLinkSwapper } from '../../../fixtures/link-swapper.js';

const GIB = 1024 ** 3;

let root: string;
let volume: string;
let outside: string;

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-du-'));
  volume = path.join(root, 'volume');
  outside = path.join(root, 'outside');
  fs.mkdirSync(volume);
  fs.mkdirSync(outside);
});

afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

function write(relative: string, bytes: number | string, base = volume): string {
  const file = path.join(base, relative);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, typeof bytes === 'string' ? bytes : Buffer.alloc(bytes, 1));
  return file;
}

/** A file of `bytes` apparent size with no data blocks. */
function sparse(file: string, bytes: number): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.closeSync(fs.openSync(file, 'w'));
  fs.truncateSync(file, bytes);
  return file;
}

describe('measureDiskUsage', () => {
  it('adds up the files of the whole tree; folders, empty ones included, add nothing', async () => {
    write('a.bin', 1000);
    write('dir/b.bin', 2345);
    write('dir/deeper/still/c.bin', 7);
    write('empty.txt', 0);
    fs.mkdirSync(path.join(volume, 'dir', 'empty-folder', 'inside'), { recursive: true });
    expect(await measureDiskUsage(volume)).toBe(1000 + 2345 + 7);
  });

  it('is 0 for an empty volume and for one that does not exist', async () => {
    expect(await measureDiskUsage(volume)).toBe(0);
    expect(await measureDiskUsage(path.join(root, 'no-such-volume'))).toBe(0);
  });

  it('counts a file with several hard links once, wherever its links are', async () => {
    const file = write('world/region.bin', 4096);
    fs.linkSync(file, path.join(volume, 'copy.bin'));
    fs.mkdirSync(path.join(volume, 'more'));
    fs.linkSync(file, path.join(volume, 'more', 'again.bin'));
    // A link outside the volume too: the inode is still counted, once.
    fs.linkSync(file, path.join(outside, 'elsewhere.bin'));
    write('other.bin', 10);
    expect(await measureDiskUsage(volume)).toBe(4096 + 10);
  });

  it('counts a sparse file at its apparent size, as a restore of it would', async () => {
    const file = sparse(path.join(volume, 'sparse.img'), 2 * GIB);
    expect(fs.statSync(file).blocks * 512).toBeLessThan(1024 * 1024);
    write('small.txt', 5);
    expect(await measureDiskUsage(volume)).toBe(2 * GIB + 5);
  });

  it('never follows a symlink: to a big file outside, to a folder outside, to a file inside, or dangling', async () => {
    const big = sparse(path.join(outside, 'huge.img'), 50 * GIB);
    write('data/a.bin', 100, outside);
    const inside = write('real.bin', 300);
    fs.symlinkSync(big, path.join(volume, 'huge-link'));
    fs.symlinkSync(outside, path.join(volume, 'folder-link'));
    fs.symlinkSync(inside, path.join(volume, 'inside-link'));
    fs.symlinkSync('../../nowhere', path.join(volume, 'dangling'));
    fs.mkdirSync(path.join(volume, 'nested'));
    fs.symlinkSync('../../outside', path.join(volume, 'nested', 'relative-link'));
    expect(await measureDiskUsage(volume)).toBe(300);
  });

  it('refuses a volume root that is itself a symlink', async () => {
    write('big.bin', 1000, outside);
    const linked = path.join(root, 'linked-volume');
    fs.symlinkSync(outside, linked);
    await expect(measureDiskUsage(linked)).rejects.toMatchObject({ code: expect.stringMatching(/^(ENOTDIR|ELOOP)$/) });
  });

  it('counts only regular files: a FIFO adds nothing (and is never opened)', async () => {
    write('a.bin', 42);
    // coreutils' mkfifo: Node has none of its own.
    execFileSync('mkfifo', [path.join(volume, 'pipe')]);
    expect(await measureDiskUsage(volume)).toBe(42);
  });

  it(`refuses a tree nested more than ${MAX_DEPTH} folders deep rather than under-count it`, async () => {
    let dir = volume;
    for (let i = 0; i < MAX_DEPTH + 5; i++) {
      dir = path.join(dir, 'd');
      fs.mkdirSync(dir);
    }
    await expect(measureDiskUsage(volume)).rejects.toThrow(/nested more than/);
    // ... while a tree within the bound is measured whole.
    fs.rmSync(path.join(volume, 'd'), { recursive: true });
    dir = volume;
    for (let i = 0; i < 200; i++) dir = path.join(dir, 'd');
    write(path.relative(volume, path.join(dir, 'deep.bin')), 9);
    expect(await measureDiskUsage(volume)).toBe(9);
  });

  it('skips entries that vanish mid-walk: a tree removed while it is measured is never an error', async () => {
    let total = 0;
    for (let d = 0; d < 60; d++) {
      for (let f = 0; f < 40; f++) {
        write(`tree/d${d}/sub/f${f}.bin`, 100);
        total += 100;
      }
    }
    expect(await measureDiskUsage(volume)).toBe(total);
    for (let round = 0; round < 5; round++) {
      const tree = path.join(volume, `copy${round}`);
      fs.cpSync(path.join(volume, 'tree'), tree, { recursive: true });
      // fs.promises.rm runs on libuv's thread pool, at the same time as the walk's own calls.
      const [measured] = await Promise.all([measureDiskUsage(volume), fs.promises.rm(tree, { recursive: true })]);
      expect(measured).toBeGreaterThanOrEqual(total);
      expect(measured).toBeLessThanOrEqual(2 * total);
    }
    expect(await measureDiskUsage(volume)).toBe(total);
  });
});

describe('a folder swapped for a symlink to outside the volume, again and again', () => {
  const ROUNDS = 300;
  let swapper: ChildProcess | undefined;

  afterEach(async () => {
    await stopLinkSwapper(swapper);
    swapper = undefined;
  });

  it(`the measurement never counts what the link points to (${ROUNDS} rounds)`, { timeout: 60_000 }, async () => {
    const victim = path.join(volume, 'victim');
    fs.mkdirSync(path.join(victim, 'data'), { recursive: true });
    write('victim/file.txt', 'inside');
    write('victim/data/keep.txt', 'inside');
    for (const name of SMALL_FILES) write(`victim/${name}`, 'inside');
    write('own.bin', 1000);
    // Outside holds the same names, each far bigger: crossing the link once shows in the figure.
    sparse(path.join(outside, 'file.txt'), 10 * GIB);
    sparse(path.join(outside, 'data', 'keep.txt'), 10 * GIB);
    for (const name of SMALL_FILES) sparse(path.join(outside, name), GIB);
    sparse(path.join(outside, 'canary.img'), 100 * GIB);
    // Everything of the victim folder, seen under both names at worst (renamed to victim.real mid-walk).
    const ceiling = 1000 + 2 * (2 + SMALL_FILES.length) * 'inside'.length;

    swapper = await startLinkSwapper(volume, outside);
    const figures: number[] = [];
    let sawLink = 0;
    let sawFolder = 0;
    for (let round = 0; round < ROUNDS; round++) {
      figures.push(await measureDiskUsage(volume));
      const now = fs.lstatSync(victim, { throwIfNoEntry: false });
      if (now?.isSymbolicLink()) sawLink++;
      else if (now?.isDirectory()) sawFolder++;
    }
    expect(figures.filter((bytes) => bytes > ceiling)).toEqual([]);
    expect(Math.min(...figures)).toBeGreaterThanOrEqual(1000);
    // The race was real: the folder and the link both stood there while the walks ran.
    expect(sawLink).toBeGreaterThan(0);
    expect(sawFolder).toBeGreaterThan(0);
  });
});

describe('DiskUsageCache', () => {
  /** A measure whose walks the test finishes by hand, counting how many were started. */
  function manualMeasure() {
    const walks: { dir: string; finish: (bytes: number) => void; fail: (err: Error) => void }[] = [];
    const measure = (dir: string) =>
      new Promise<number>((resolve, reject) => {
        walks.push({ dir, finish: resolve, fail: reject });
      });
    return { walks, measure };
  }

  it('shares one walk among concurrent callers of the same key, and walks other keys apart', async () => {
    const { walks, measure } = manualMeasure();
    const cache = new DiskUsageCache(measure);
    const asked = [
      cache.get('a', '/v/a', 0),
      cache.get('a', '/v/a', 0),
      cache.get('a', '/v/a', 10_000),
      cache.get('b', '/v/b', 0),
    ];
    expect(walks.map((w) => w.dir)).toEqual(['/v/a', '/v/b']);
    walks[0]!.finish(111);
    walks[1]!.finish(222);
    expect(await Promise.all(asked)).toEqual([111, 111, 111, 222]);
  });

  it('reuses a figure younger than maxAge, walks again otherwise (maxAge 0: every call after the walk ends)', async () => {
    const { walks, measure } = manualMeasure();
    const cache = new DiskUsageCache(measure);
    const first = cache.get('a', '/v/a', 0);
    walks[0]!.finish(1);
    expect(await first).toBe(1);
    expect(await cache.get('a', '/v/a', 60_000)).toBe(1);
    expect(walks).toHaveLength(1);

    const fresh = cache.get('a', '/v/a', 0);
    expect(walks).toHaveLength(2);
    walks[1]!.finish(2);
    expect(await fresh).toBe(2);

    await new Promise((resolve) => setTimeout(resolve, 30));
    const aged = cache.get('a', '/v/a', 20);
    expect(walks).toHaveLength(3);
    walks[2]!.finish(3);
    expect(await aged).toBe(3);
    expect(await cache.get('a', '/v/a', 60_000)).toBe(3);
    expect(walks).toHaveLength(3);
  });

  it('forget drops the figure, and a walk in flight when it was called never records its own', async () => {
    const { walks, measure } = manualMeasure();
    const cache = new DiskUsageCache(measure);
    const first = cache.get('a', '/v/a', 0);
    walks[0]!.finish(5);
    await first;
    cache.forget('a');
    const second = cache.get('a', '/v/a', 60_000);
    expect(walks).toHaveLength(2);
    cache.forget('a');
    // A caller after the forget does not join the walk that began before it.
    const third = cache.get('a', '/v/a', 60_000);
    expect(walks).toHaveLength(3);
    walks[2]!.finish(7);
    walks[1]!.finish(6);
    expect([await second, await third]).toEqual([6, 7]);
    expect(await cache.get('a', '/v/a', 60_000)).toBe(7);
    expect(walks).toHaveLength(3);
  });

  it('a failed walk is reported to every caller sharing it and not kept', async () => {
    const { walks, measure } = manualMeasure();
    const cache = new DiskUsageCache(measure);
    const asked = [cache.get('a', '/v/a', 0), cache.get('a', '/v/a', 0)];
    walks[0]!.fail(new Error('EACCES'));
    for (const result of await Promise.allSettled(asked)) expect(result).toMatchObject({ status: 'rejected' });
    const again = cache.get('a', '/v/a', 60_000);
    expect(walks).toHaveLength(2);
    walks[1]!.finish(9);
    expect(await again).toBe(9);
  });

  it('measures real volumes: a change is seen at maxAge 0, not through a kept figure', async () => {
    const cache = new DiskUsageCache();
    write('a.bin', 100);
    expect(await cache.get('v', volume, 0)).toBe(100);
    write('b.bin', 50);
    expect(await cache.get('v', volume, 60_000)).toBe(100);
    expect(await cache.get('v', volume, 0)).toBe(150);
  });
});
