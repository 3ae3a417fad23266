import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VolumeMerge, type MergeOperations } from '../../../../src/daemon/local/archive/merge.js';
import { makeArchiveSandbox, snapshot, write } from './trees.js';

let root: string;
let volume: string;
let outside: string;

beforeEach(() => {
  ({ root, volume, outside } = makeArchiveSandbox());
});

afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

describe('the merge into the volume', () => {
  /** A staged tree as an extraction leaves it. */
  function stage(into: string): void {
    write(path.join(into, 'a.txt'), 'staged a');
    write(path.join(into, 'dir', 'b.txt'), 'staged b');
    write(path.join(into, 'dir', 'new.txt'), 'staged new');
    write(path.join(into, 'link', 'inside.txt'), 'replaces the link');
    write(path.join(into, 'z.txt'), 'staged z');
  }

  it('undoes a merge that fails at any step, leaving the volume exactly as it was', async () => {
    for (const truncate of [false, true]) {
      fs.rmSync(volume, { recursive: true, force: true });
      write(path.join(volume, 'a.txt'), 'original a');
      write(path.join(volume, 'dir', 'b.txt'), 'original b');
      write(path.join(volume, 'keep.txt'), 'kept');
      fs.symlinkSync(outside, path.join(volume, 'link'));
      fs.chmodSync(path.join(volume, 'dir'), 0o700);
      const before = snapshot(volume);
      let completed = false;
      for (let failAt = 1; !completed; failAt += 1) {
        expect(failAt).toBeLessThan(50);
        const work = fs.mkdtempSync(path.join(root, '.restore-test-'));
        stage(path.join(work, 'tree'));
        fs.mkdirSync(path.join(work, 'displaced'));
        let steps = 0;
        const step = async () => {
          steps += 1;
          if (steps === failAt) throw Object.assign(new Error('EIO: simulated failure'), { code: 'EIO' });
        };
        const operations: MergeOperations = {
          rename: async (from, to) => {
            await step();
            await fs.promises.rename(from, to);
          },
          chmod: async (target, mode) => {
            await step();
            await fs.promises.chmod(target, mode);
          },
        };
        const merge = new VolumeMerge(volume, path.join(work, 'displaced'), operations);
        try {
          if (truncate) await merge.emptyVolume();
          await merge.mergeFrom(path.join(work, 'tree'));
          completed = true;
        } catch (err) {
          expect((err as Error).message).toContain('simulated');
          expect(await merge.rollback()).toBe(true);
          expect(snapshot(volume), `truncate=${truncate}, failing step ${failAt}`).toEqual(before);
        }
        fs.rmSync(work, { recursive: true });
      }
      // The last round ran to the end: the link was replaced, never followed.
      expect(fs.readFileSync(path.join(volume, 'link', 'inside.txt'), 'utf8')).toBe('replaces the link');
      expect(fs.readdirSync(outside)).toEqual(['secret.txt']);
    }
  });
});
