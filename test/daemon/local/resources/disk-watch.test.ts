/**
 * The disk watch (docs/reference/containment.md: disk and inode limits held while running): a
 * server over a limit in two measurements a confirmation apart is handed on
 * once and no longer watched; one that gave the space back before the second
 * is left alone; servers without limits are not measured; the default inode
 * limit is one per 4 KiB of the disk limit.
 */
import { describe, expect, it } from 'vitest';
import type { DaemonServer, ServerLimits } from '../../../../src/daemon/daemon.js';
import { DiskWatch } from '../../../../src/daemon/local/resources/disk-watch.js';
import { inodeLimit, overLimit, type VolumeUsage } from '../../../../src/daemon/local/volume/disk-usage.js';

const MiB = 1024 * 1024;
const limits = (diskMiB: number, inodes?: number | null): ServerLimits => ({
  memoryMiB: 0,
  cpuPercent: 0,
  diskMiB,
  pids: null,
  inodes,
});
const server = (uuid: string, serverLimits: ServerLimits): DaemonServer => ({
  uuid,
  startup: 'x',
  stopCommand: null,
  limits: serverLimits,
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A watch over figures the test sets per server, recording what it measured and whom it stopped. */
function watchOf(figures: Map<string, VolumeUsage[]>) {
  const measured: string[] = [];
  const exceeded: { uuid: string; detail: string }[] = [];
  const watch = new DiskWatch({
    intervalMs: 20,
    confirmDelayMs: 20,
    measure: async (target) => {
      measured.push(target.uuid);
      const queue = figures.get(target.uuid)!;
      return queue.length > 1 ? queue.shift()! : queue[0]!;
    },
    onExceeded: async (target, detail) => {
      exceeded.push({ uuid: target.uuid, detail });
    },
    onError: (uuid, err) => {
      throw new Error(`${uuid}: ${String(err)}`);
    },
  });
  return { watch, measured, exceeded };
}

describe('the inode limit and what is over', () => {
  it('defaults to one inode per 4 KiB of the disk limit; 0 is unlimited; none without a disk limit', () => {
    expect(inodeLimit(limits(50))).toBe(12_800);
    expect(inodeLimit(limits(50, 100))).toBe(100);
    expect(inodeLimit(limits(50, 0))).toBeNull();
    expect(inodeLimit(limits(0))).toBeNull();
    expect(inodeLimit(limits(0, 10))).toBe(10);
  });

  it('names the limit passed with both figures', () => {
    expect(overLimit({ bytes: 50 * MiB, inodes: 12_800 }, limits(50))).toBeNull();
    expect(overLimit({ bytes: 50 * MiB + 1, inodes: 1 }, limits(50))).toBe('51 MiB of 50 MiB');
    expect(overLimit({ bytes: 1, inodes: 12_801 }, limits(50))).toBe('12801 files and folders of 12800');
    expect(overLimit({ bytes: 10 ** 12, inodes: 10 ** 9 }, limits(0, 0))).toBeNull();
  });
});

describe('DiskWatch', () => {
  it('hands on a server over its limit in two measurements, once, and stops watching it', async () => {
    const figures = new Map([
      ['over', [{ bytes: 200 * MiB, inodes: 5 }]],
      ['within', [{ bytes: MiB, inodes: 5 }]],
    ]);
    const { watch, exceeded, measured } = watchOf(figures);
    watch.track(server('over', limits(50)));
    watch.track(server('within', limits(50)));
    await sleep(300);
    expect(exceeded).toEqual([{ uuid: 'over', detail: '200 MiB of 50 MiB' }]);
    expect(watch.isWatched('over')).toBe(false);
    expect(watch.isWatched('within')).toBe(true);
    expect(measured.filter((uuid) => uuid === 'over')).toHaveLength(2);
    expect(measured.filter((uuid) => uuid === 'within').length).toBeGreaterThan(2);
    await watch.close();
  });

  it('leaves alone a server that gave the space back before the confirming measurement', async () => {
    const figures = new Map([
      [
        'transient',
        [
          { bytes: 200 * MiB, inodes: 5 },
          { bytes: MiB, inodes: 5 },
        ],
      ],
    ]);
    const { watch, exceeded } = watchOf(figures);
    watch.track(server('transient', limits(50)));
    await sleep(200);
    expect(exceeded).toEqual([]);
    expect(watch.isWatched('transient')).toBe(true);
    await watch.close();
  });

  it('counts inodes against the default limit: 1 MiB of disk allows 256', async () => {
    const figures = new Map([['hog', [{ bytes: 10, inodes: 257 }]]]);
    const { watch, exceeded } = watchOf(figures);
    watch.track(server('hog', limits(1)));
    await sleep(200);
    expect(exceeded).toEqual([{ uuid: 'hog', detail: '257 files and folders of 256' }]);
    await watch.close();
  });

  it('measures no server without limits, nor one untracked (stopped)', async () => {
    const figures = new Map([
      ['free', [{ bytes: 10 ** 12, inodes: 10 ** 9 }]],
      ['stopped', [{ bytes: 10 ** 12, inodes: 10 ** 9 }]],
    ]);
    const { watch, exceeded, measured } = watchOf(figures);
    watch.track(server('free', limits(0)));
    watch.track(server('stopped', limits(50)));
    watch.untrack('stopped');
    await sleep(150);
    expect(measured).toEqual([]);
    expect(exceeded).toEqual([]);
    await watch.close();
  });
});
