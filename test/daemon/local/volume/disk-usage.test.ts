/**
 * A volume's measured size (docs/reference/containment.md's disk and inode limits): allocated
 * blocks and inodes of every entry, each inode once (what `du -sB1` and `du
 * -s --inodes` count), no link followed even while the server's process swaps
 * a folder for one; and the cache that shares walks.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
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

/** What du says of `dir`: allocated bytes and inodes, each inode once, links never followed. */
function du(dir: string): { bytes: number; inodes: number } {
  const first = (args: string[]) => Number(execFileSync('du', args, { encoding: 'utf8' }).split('\t')[0]);
  return { bytes: first(['-sB1', dir]), inodes: first(['-s', '--inodes', dir]) };
}

/** A file of `bytes` apparent size with no data blocks. */
function sparse(file: string, bytes: number): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.closeSync(fs.openSync(file, 'w'));
  fs.truncateSync(file, bytes);
  return file;
}

describe('measureDiskUsage', () => {
  it("counts every entry in allocated blocks and inodes: files, empty files, folders (empty ones too), the volume's own", async () => {
    write('a.bin', 1000);
    write('dir/b.bin', 2345);
    write('dir/deeper/still/c.bin', 7);
    write('empty.txt', 0);
    fs.mkdirSync(path.join(volume, 'dir', 'empty-folder', 'inside'), { recursive: true });
    const measured = await measureDiskUsage(volume);
    // The volume, dir, deeper, still, empty-folder, inside; a.bin, b.bin, c.bin, empty.txt.
    expect(measured.inodes).toBe(10);
    expect(measured).toEqual(du(volume));
    expect(measured.bytes).toBeGreaterThanOrEqual(1000 + 2345 + 7);
  });

  it('is the folder alone for an empty volume, and nothing for one that does not exist', async () => {
    expect(await measureDiskUsage(volume)).toEqual({ bytes: fs.statSync(volume).blocks * 512, inodes: 1 });
    expect(await measureDiskUsage(path.join(root, 'no-such-volume'))).toEqual({ bytes: 0, inodes: 0 });
  });

  it('counts a file with several hard links once, wherever its links are', async () => {
    const file = write('world/region.bin', 4096);
    fs.linkSync(file, path.join(volume, 'copy.bin'));
    fs.mkdirSync(path.join(volume, 'more'));
    fs.linkSync(file, path.join(volume, 'more', 'again.bin'));
    // A link outside the volume too: the inode is still counted, once.
    fs.linkSync(file, path.join(outside, 'elsewhere.bin'));
    write('other.bin', 10);
    const measured = await measureDiskUsage(volume);
    expect(measured.inodes).toBe(1 + 2 + 2); // the volume, world, more; region.bin, other.bin
    expect(measured).toEqual(du(volume));
  });

  it('counts a sparse file by the blocks it holds, not its apparent size', async () => {
    const file = sparse(path.join(volume, 'sparse.img'), 2 * GIB);
    expect(fs.statSync(file).blocks * 512).toBeLessThan(1024 * 1024);
    write('small.txt', 5);
    const measured = await measureDiskUsage(volume);
    expect(measured.bytes).toBeLessThan(1024 * 1024);
    expect(measured).toEqual(du(volume));
  });

  it('counts a symlink as itself and never follows it: to a big file outside, to a folder outside, to a file inside, or dangling', async () => {
    const big = write('huge.bin', 4 * 1024 * 1024, outside);
    for (let i = 0; i < 50; i++) write(`data/f${i}`, 100, outside);
    const inside = write('real.bin', 300);
    fs.symlinkSync(big, path.join(volume, 'huge-link'));
    fs.symlinkSync(outside, path.join(volume, 'folder-link'));
    fs.symlinkSync(inside, path.join(volume, 'inside-link'));
    fs.symlinkSync('../../nowhere', path.join(volume, 'dangling'));
    fs.mkdirSync(path.join(volume, 'nested'));
    fs.symlinkSync('../../outside', path.join(volume, 'nested', 'relative-link'));
    const measured = await measureDiskUsage(volume);
    expect(measured.inodes).toBe(1 + 1 + 4 + 1 + 1); // the volume, real.bin, four links, nested, its link
    expect(measured.bytes).toBeLessThan(1024 * 1024);
    expect(measured).toEqual(du(volume));
  });

  it('refuses a volume root that is itself a symlink', async () => {
    write('big.bin', 1000, outside);
    const linked = path.join(root, 'linked-volume');
    fs.symlinkSync(outside, linked);
    await expect(measureDiskUsage(linked)).rejects.toMatchObject({ code: expect.stringMatching(/^(ENOTDIR|ELOOP)$/) });
  });

  it('counts a FIFO as an inode (it is never opened)', async () => {
    write('a.bin', 42);
    // coreutils' mkfifo: Node has none of its own.
    execFileSync('mkfifo', [path.join(volume, 'pipe')]);
    const measured = await measureDiskUsage(volume);
    expect(measured.inodes).toBe(3);
    expect(measured).toEqual(du(volume));
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
    expect(await measureDiskUsage(volume)).toEqual(du(volume));
  });

  it(
    'skips entries that vanish mid-walk: a tree removed while it is measured is never an error',
    { timeout: 120_000 },
    async () => {
      // Bounded work, not a race against the clock: a few hundred entries per round, since the walk starts
      // only once the removal is under way (2,400 entries took over 30 s on a busy two-core machine).
      const FOLDERS = 24;
      for (let d = 0; d < FOLDERS; d++) {
        for (let f = 0; f < 10; f++) write(`tree/d${d}/sub/f${f}.bin`, 100);
      }
      const total = du(volume);
      expect(await measureDiskUsage(volume)).toEqual(total);
      for (let round = 0; round < 5; round++) {
        const tree = path.join(volume, `copy${round}`);
        fs.cpSync(path.join(volume, 'tree'), tree, { recursive: true });
        // Another process takes the copy apart (fs.promises.rm would need this event loop, which the walk holds
        // in slices); the walk starts once it is under way, after a bounded number of looks, not a time.
        const removal = spawn('rm', ['-rf', tree], { stdio: 'ignore' });
        const removed = new Promise<void>((resolve, reject) => {
          removal.on('error', reject);
          removal.on('close', () => resolve());
        });
        for (let look = 0; look < 1_000_000 && fs.existsSync(tree) && fs.readdirSync(tree).length === FOLDERS; look++);
        const [measured] = await Promise.all([measureDiskUsage(volume), removed]);
        // The walk met the copy partly gone (the whole copy is total.inodes - 1 more entries).
        expect(measured.inodes).toBeLessThan(2 * total.inodes - 1);
        expect(measured.inodes).toBeGreaterThanOrEqual(total.inodes);
        expect(measured.inodes).toBeLessThanOrEqual(2 * total.inodes);
        expect(measured.bytes).toBeLessThanOrEqual(2 * total.bytes);
      }
      expect(await measureDiskUsage(volume)).toEqual(total);
    },
  );
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
    // Outside holds the same names, each far bigger, and many more entries: crossing the link once shows in the figures.
    write('file.txt', 8 * 1024 * 1024, outside);
    write('data/keep.txt', 8 * 1024 * 1024, outside);
    for (const name of SMALL_FILES) write(name, 1024 * 1024, outside);
    for (let i = 0; i < 2000; i++) write(`data/many/f${i}`, 0, outside);
    // Everything of the volume, the victim folder seen under both names at worst (renamed to victim.real mid-walk).
    const before = du(volume);
    const ceiling = { bytes: 2 * before.bytes, inodes: 2 * before.inodes };

    swapper = await startLinkSwapper(volume, outside);
    const figures: { bytes: number; inodes: number }[] = [];
    let sawLink = 0;
    let sawFolder = 0;
    for (let round = 0; round < ROUNDS; round++) {
      figures.push(await measureDiskUsage(volume));
      const now = fs.lstatSync(victim, { throwIfNoEntry: false });
      if (now?.isSymbolicLink()) sawLink++;
      else if (now?.isDirectory()) sawFolder++;
    }
    expect(figures.filter((figure) => figure.bytes > ceiling.bytes || figure.inodes > ceiling.inodes)).toEqual([]);
    expect(Math.min(...figures.map((figure) => figure.bytes))).toBeGreaterThanOrEqual(1000);
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
    expect((await cache.get('v', volume, 0)).inodes).toBe(2);
    write('b.bin', 50);
    expect((await cache.get('v', volume, 60_000)).inodes).toBe(2);
    expect(await cache.get('v', volume, 0)).toEqual(du(volume));
  });
});
