/**
 * The time-of-check race (docs/reference/backups-and-restores.md#durability): a server's process swaps a folder of its
 * volume for a symlink to a folder outside, over and over, while a backup or
 * a delete_files runs. Hundreds of rounds; not one may read or delete
 * anything outside the volume.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createArchive } from '../../../../src/daemon/local/archive/create.js';
import { deleteVolumePaths } from '../../../../src/daemon/local/volume/delete-paths.js';
import { archiveNames } from '../archive/trees.js';
import { SMALL_FILES, startLinkSwapper, stopLinkSwapper } from '../../../fixtures/link-swapper.js';

const ROUNDS = 300;

let root: string;
let volume: string;
let outside: string;
let swapper: ChildProcess | undefined;

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-race-'));
  volume = path.join(root, 'volume');
  outside = path.join(root, 'outside');
  fs.mkdirSync(path.join(volume, 'victim', 'data'), { recursive: true });
  fs.writeFileSync(path.join(volume, 'victim', 'file.txt'), 'inside');
  fs.writeFileSync(path.join(volume, 'victim', 'data', 'keep.txt'), 'inside');
  fs.mkdirSync(path.join(outside, 'data'), { recursive: true });
  // Outside names the same entries as the folder it impersonates, so a walk that crosses the link finds them.
  fs.writeFileSync(path.join(outside, 'file.txt'), 'outside: must survive');
  fs.writeFileSync(path.join(outside, 'data', 'keep.txt'), 'outside: must survive');
  fs.writeFileSync(path.join(outside, 'canary.txt'), 'outside: must never be archived');
  for (const name of SMALL_FILES) {
    fs.writeFileSync(path.join(volume, 'victim', name), 'inside');
    fs.writeFileSync(path.join(outside, name), 'outside: must survive');
  }
});

afterEach(async () => {
  await stopLinkSwapper(swapper);
  swapper = undefined;
  fs.rmSync(root, { recursive: true, force: true });
});

/** Starts the hostile process, swapping `<folder>/victim` (folder: the volume by default), and waits until it is swapping. */
async function startSwapping(folder = volume): Promise<void> {
  swapper = await startLinkSwapper(folder, outside);
}

function outsideSnapshot(): string {
  const canary = fs.readFileSync(path.join(outside, 'canary.txt'), 'utf8');
  const file = fs.readFileSync(path.join(outside, 'file.txt'), 'utf8');
  const keep = fs.readFileSync(path.join(outside, 'data', 'keep.txt'), 'utf8');
  const small = SMALL_FILES.map((name) => fs.readFileSync(path.join(outside, name), 'utf8'));
  return JSON.stringify([fs.readdirSync(outside).sort(), canary, file, keep, small]);
}

describe('a folder swapped for a symlink to outside the volume, again and again', () => {
  it(`a backup never archives what the link points to (${ROUNDS} rounds)`, { timeout: 120_000 }, async () => {
    const before = outsideSnapshot();
    await startSwapping();
    const archivePath = path.join(root, 'backup.tar.gz');
    const escapes: string[] = [];
    let sawLink = 0;
    let sawFolder = 0;
    for (let round = 0; round < ROUNDS; round++) {
      await createArchive({ volumeDir: volume, archivePath, ignore: [] });
      const entries = archiveNames(archivePath);
      for (const entry of entries) {
        if (entry.path.endsWith('canary.txt')) escapes.push(`round ${round}: ${entry.path}`);
      }
      if (entries.some((e) => e.path === 'victim' && e.type === 'SymbolicLink')) sawLink++;
      if (entries.some((e) => e.path === 'victim/' && e.type === 'Directory')) sawFolder++;
    }
    expect(escapes).toEqual([]);
    expect(outsideSnapshot()).toBe(before);
    // The race was real: the walk met the folder and the link both.
    expect(sawLink).toBeGreaterThan(0);
    expect(sawFolder).toBeGreaterThan(0);
  });

  it(`delete_files never deletes through the link (${ROUNDS} rounds)`, { timeout: 120_000 }, async () => {
    const before = outsideSnapshot();
    await startSwapping();
    let refused = 0;
    let deleted = 0;
    const paths = ['victim/file.txt', 'victim/data', ...SMALL_FILES.map((name) => `victim/${name}`)];
    for (let round = 0; round < ROUNDS; round++) {
      for (const target of paths) {
        try {
          await deleteVolumePaths(volume, [target]);
          deleted++;
        } catch (err) {
          // Met the link on the way: refused, which is right.
          expect((err as Error).message).toMatch(/passes through a symlink/);
          refused++;
        }
      }
      expect(outsideSnapshot()).toBe(before);
    }
    // Both sides of the race happened.
    expect(deleted).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  });

  it(
    `delete_files of a whole folder never crosses a link swapped in below it (${ROUNDS} rounds)`,
    { timeout: 120_000 },
    async () => {
      const before = outsideSnapshot();
      const world = path.join(volume, 'world');
      fs.mkdirSync(world);
      await startSwapping(world);
      const failures: string[] = [];
      let sawLink = 0;
      for (let round = 0; round < ROUNDS; round++) {
        // The folder comes back each round; the swapper fills the folder inside it and swaps it again.
        fs.mkdirSync(path.join(world, 'victim'), { recursive: true });
        await new Promise((resolve) => setTimeout(resolve, 1));
        if (fs.lstatSync(path.join(world, 'victim'), { throwIfNoEntry: false })?.isSymbolicLink()) sawLink++;
        try {
          await deleteVolumePaths(volume, ['world']);
        } catch (err) {
          failures.push(`round ${round}: ${(err as Error).message}`);
        }
        expect(outsideSnapshot()).toBe(before);
      }
      // A process that rebuilds the tree as fast as it is removed can make a removal give up (SafeDir.removeTree's
      // bound), which is an honest failure of the task, never an escape; any other failure is a defect.
      expect(failures.filter((failure) => !/kept changing while it was being removed$/.test(failure))).toEqual([]);
      expect(failures.length).toBeLessThan(ROUNDS / 20);
      expect(sawLink).toBeGreaterThan(0);
    },
  );
});
