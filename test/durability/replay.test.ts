/**
 * The roll-forward claim of docs/RESTORE.md "Crash safety", at every step of
 * the move rather than at a few: the move into the volume is stopped dead
 * after its n-th rename or chmod (no undo, as a SIGKILL would leave it), for
 * every n, with and without truncate; settling the restore folder must then
 * leave exactly the tree an uninterrupted restore gives, and remove nothing
 * outside. The crash-mid-undo case is checked the same way: a failure, an
 * undo stopped dead after its m-th step, then the replay.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MergeOperations } from '../../src/daemon/local/archive/merge.js';
import { moveIntoVolume, newMerge } from '../../src/daemon/local/restore/move-into-volume.js';
import { discardFolder, settleRestoreFolder } from '../../src/daemon/local/restore/recover-restore.js';
import { restoreFolder, writeJournal } from '../../src/daemon/local/restore/restore-folder.js';
import { snapshot, write } from '../daemon/local/archive/trees.js';

let root: string;
let volume: string;
let outside: string;

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-replay-'));
  volume = path.join(root, 'volumes', 'server');
  outside = path.join(root, 'outside');
  write(path.join(outside, 'secret.txt'), 'outside secret');
});

afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

function oldVolume(): void {
  fs.rmSync(volume, { recursive: true, force: true });
  write(path.join(volume, 'a.txt'), 'original a');
  write(path.join(volume, 'dir', 'b.txt'), 'original b');
  write(path.join(volume, 'dir', 'deep', 'c.txt'), 'original c');
  write(path.join(volume, 'becomes-file', 'x.txt'), 'a folder the restore replaces by a file');
  write(path.join(volume, 'becomes-dir'), 'a file the restore replaces by a folder');
  write(path.join(volume, 'keep.txt'), 'kept unless truncate');
  write(path.join(volume, 'locked', 'inside.txt'), 'in a read-only folder');
  fs.chmodSync(path.join(volume, 'locked'), 0o555);
  fs.symlinkSync(outside, path.join(volume, 'link'));
  fs.chmodSync(path.join(volume, 'dir'), 0o700);
}

function stage(staged: string): void {
  write(path.join(staged, 'a.txt'), 'restored a');
  write(path.join(staged, 'dir', 'b.txt'), 'restored b');
  write(path.join(staged, 'dir', 'deep', 'new.txt'), 'restored new');
  write(path.join(staged, 'becomes-file'), 'now a file');
  write(path.join(staged, 'becomes-dir', 'y.txt'), 'now in a folder');
  write(path.join(staged, 'link', 'inside.txt'), 'replaces the link');
  write(path.join(staged, 'locked'), 'replaces the read-only folder');
  write(path.join(staged, 'z.txt'), 'restored z');
  fs.chmodSync(path.join(staged, 'dir'), 0o750);
}

/**
 * Operations that fail at the `failAt`-th call (the move's error), then, while
 * undoing, do `undoneSteps` calls and die: every later call throws without acting.
 */
function undoKilledAfter(failAt: number, undoneSteps: number): MergeOperations & { dead(): boolean } {
  let calls = 0;
  const act = async (work: () => Promise<void>) => {
    calls += 1;
    if (calls === failAt) throw new Error('failed');
    if (calls > failAt + undoneSteps) throw new Error('killed');
    await work();
  };
  return {
    rename: (from, to) => act(() => fs.promises.rename(from, to)),
    chmod: (target, mode) => act(() => fs.promises.chmod(target, mode)),
    dead: () => calls >= failAt + undoneSteps,
  };
}

/** Operations that stop dead (throw) at the `stopAt`-th call, counting from 1; Infinity never. */
function stoppingAt(stopAt: number): MergeOperations & { calls: number } {
  const ops = {
    calls: 0,
    async rename(from: string, to: string) {
      if (++ops.calls === stopAt) throw new Error('killed');
      await fs.promises.rename(from, to);
    },
    async chmod(target: string, mode: number) {
      if (++ops.calls === stopAt) throw new Error('killed');
      await fs.promises.chmod(target, mode);
    },
  };
  return ops;
}

describe('replaying a move cut short at any step', () => {
  for (const truncate of [false, true]) {
    it(`finishes it exactly (truncate=${truncate}), whichever step it stopped at`, async () => {
      const journal = { version: 1 as const, volume: 'server', truncate };
      let expected: Record<string, string> | undefined;
      let steps = 0;
      for (let stopAt = Infinity; ; stopAt = stopAt === Infinity ? 1 : stopAt + 1) {
        if (expected && stopAt > steps) break;
        oldVolume();
        const folder = restoreFolder(path.dirname(volume), `r${stopAt}`);
        fs.mkdirSync(folder.root, { mode: 0o700 });
        stage(folder.staged);
        const ops = stoppingAt(stopAt);
        try {
          await moveIntoVolume(folder, volume, journal, newMerge(folder, volume, ops));
        } catch (err) {
          expect((err as Error).message).toBe('killed');
        }
        if (stopAt === Infinity) steps = ops.calls;
        expect(await settleRestoreFolder(folder)).toBe('restored');
        await discardFolder(folder);
        const tree = snapshot(volume, { mtimes: false });
        if (stopAt === Infinity) expected = tree;
        expect(tree, `stopped at step ${stopAt} of ${steps}`).toEqual(expected);
        expect(fs.existsSync(folder.root)).toBe(false);
        expect(fs.readdirSync(outside)).toEqual(['secret.txt']);
      }
      expect(steps).toBeGreaterThan(8);
      expect(expected!['z.txt']).toContain('restored z');
      expect(expected!['keep.txt'] === undefined).toBe(truncate);
    });

    it(`a crash while undoing a failed move still replays to one tree (truncate=${truncate})`, async () => {
      const journal = { version: 1 as const, volume: 'server', truncate };
      oldVolume();
      const before = snapshot(volume, { mtimes: false });
      let restored: Record<string, string> | undefined;
      {
        const folder = restoreFolder(path.dirname(volume), 'clean');
        fs.mkdirSync(folder.root, { mode: 0o700 });
        stage(folder.staged);
        await moveIntoVolume(folder, volume, journal, newMerge(folder, volume));
        await discardFolder(folder);
        restored = snapshot(volume, { mtimes: false });
      }
      for (const failAt of [3, 6, 9, 12]) {
        for (let undoneSteps = 0; undoneSteps < failAt; undoneSteps++) {
          oldVolume();
          const folder = restoreFolder(path.dirname(volume), `u${failAt}-${undoneSteps}`);
          fs.mkdirSync(folder.root, { mode: 0o700 });
          stage(folder.staged);
          const ops = undoKilledAfter(failAt, undoneSteps);
          const merge = newMerge(folder, volume, ops);
          await expect(moveIntoVolume(folder, volume, journal, merge)).rejects.toThrow('failed');
          // As restore.ts does; after the kill nothing more happens, the journal rewrite included.
          await merge.rollback(
            truncate
              ? () => (ops.dead() ? Promise.reject(new Error('killed')) : writeJournal(folder, { ...journal, phase: 'emptying' }))
              : undefined,
          );
          expect(await settleRestoreFolder(folder)).toBe('restored');
          await discardFolder(folder);
          const tree = snapshot(volume, { mtimes: false });
          expect([before, restored], `failed at ${failAt}, undone ${undoneSteps}`).toContainEqual(tree);
          expect(fs.readdirSync(outside)).toEqual(['secret.txt']);
        }
      }
    });
  }
});
