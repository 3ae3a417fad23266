/**
 * The time-of-check race during a restore's move into the volume (docs/reference/backups-and-restores.md#durability): a
 * real child process swaps a folder of the volume for a symlink to a folder
 * outside, in a tight loop, while restores merge a tree with that folder into
 * the volume. Hundreds of rounds; not one may write, move or delete anything
 * outside the volume. A round either merges (the folder was there), replaces
 * the link (moved aside as itself), or fails and is undone (the folder turned
 * into a link between a check and a use).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createArchive } from '../../src/daemon/local/archive/create.js';
import { restoreArchive } from '../../src/daemon/local/archive/restore.js';
import { SMALL_FILES, startLinkSwapper, stopLinkSwapper } from '../fixtures/link-swapper.js';

const ROUNDS = 300;

let root: string;
let volume: string;
let outside: string;
let swapper: ChildProcess | undefined;

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-restore-race-'));
  volume = path.join(root, 'volumes', 'server');
  outside = path.join(root, 'outside');
  fs.mkdirSync(path.join(volume, 'victim', 'data'), { recursive: true });
  fs.mkdirSync(path.join(outside, 'data'), { recursive: true });
  // Outside names the same entries as the folder it impersonates, so a merge that crosses the link would overwrite them.
  fs.writeFileSync(path.join(outside, 'file.txt'), 'outside: must survive');
  fs.writeFileSync(path.join(outside, 'data', 'keep.txt'), 'outside: must survive');
  for (const name of SMALL_FILES) fs.writeFileSync(path.join(outside, name), 'outside: must survive');
});

afterEach(async () => {
  await stopLinkSwapper(swapper);
  swapper = undefined;
  fs.rmSync(root, { recursive: true, force: true });
});

function outsideSnapshot(): string {
  const files = ['file.txt', 'data/keep.txt', ...SMALL_FILES].map((name) => fs.readFileSync(path.join(outside, name), 'utf8'));
  return JSON.stringify([fs.readdirSync(outside).sort(), fs.readdirSync(path.join(outside, 'data')).sort(), files]);
}

it(`a restore's move never writes through a folder swapped for a link (${ROUNDS} rounds)`, { timeout: 120_000 }, async () => {
  const source = path.join(root, 'source');
  for (const name of ['file.txt', 'data/keep.txt', 'data/new.txt', ...SMALL_FILES, 'new.txt']) {
    fs.mkdirSync(path.dirname(path.join(source, 'victim', name)), { recursive: true });
    fs.writeFileSync(path.join(source, 'victim', name), 'restored');
  }
  const archivePath = path.join(root, 'backup.tar.gz');
  const { sha1 } = await createArchive({ volumeDir: source, archivePath, ignore: [] });

  const before = outsideSnapshot();
  swapper = await startLinkSwapper(volume, outside, 100);

  let merged = 0;
  let refused = 0;
  for (let round = 0; round < ROUNDS; round++) {
    try {
      await restoreArchive({ archivePath, volumeDir: volume, expectedSha1: sha1, truncate: false });
      merged++;
    } catch (err) {
      // Met the swap between a check and a use: refused and undone (or, if the undo met it too, kept aside).
      expect((err as Error).message).toMatch(/could not be moved into the volume|undoing it failed/);
      refused++;
    }
    expect(outsideSnapshot(), `round ${round}`).toBe(before);
    // A link the restore replaced leaves the swapper's parked folder behind, which wedges it: clear it so it keeps swapping.
    const victim = fs.lstatSync(path.join(volume, 'victim'), { throwIfNoEntry: false });
    if (victim?.isDirectory()) {
      try {
        fs.rmSync(path.join(volume, 'victim.real'), { recursive: true, force: true });
      } catch {
        // The swapper refilled or moved it meanwhile: the next round clears it.
      }
    }
  }
  await stopLinkSwapper(swapper);
  expect(outsideSnapshot()).toBe(before);
  // Nothing of the restore's ever landed outside, and both sides of the race happened.
  expect(merged).toBeGreaterThan(0);
  expect(refused + merged).toBe(ROUNDS);
  console.log(`restore link race: ${merged} merged, ${refused} refused and undone`);
});
