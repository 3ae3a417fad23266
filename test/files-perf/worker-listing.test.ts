/**
 * A large folder's lstats run in worker threads (listing.ts, lstat-pool.ts):
 * the entries must be exactly what a plain lstat of each name gives (types,
 * modes, sizes, dates to the millisecond), stale temporaries removed and
 * fresh ones kept as on the small-folder path, and the folder listed must be
 * the one held open even when its path is swapped for a link before the
 * listing runs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { VolumeEntry } from '../../src/daemon/daemon.js';
import { listFolder } from '../../src/daemon/local/files/listing.js';
import { temporaryName } from '../../src/daemon/local/files/temporary-names.js';
import { toVolumeEntry } from '../../src/daemon/local/files/volume-entry.js';
import { SafeDir } from '../../src/daemon/local/volume/safe-dir.js';

/** Above listing.ts's WORKER_THRESHOLD (2,048), several worker batches (1,024 each) and a partial one. */
const ENTRIES = 5_300;

let root = '';
afterEach(() => {
  if (root) fs.rmSync(root, { recursive: true, force: true });
  root = '';
});

/** A folder of files (sizes and modes varied), folders and links, with irregular times. */
function makeFolder(dir: string): void {
  fs.mkdirSync(dir);
  for (let i = 0; i < ENTRIES; i++) {
    const name = path.join(dir, i % 3 === 0 ? `é-${i}` : `f-${i}.txt`);
    if (i % 50 === 0) fs.mkdirSync(name);
    else if (i % 77 === 0) fs.symlinkSync('/etc/passwd', name);
    else fs.writeFileSync(name, 'x'.repeat(i % 13), { mode: [0o644, 0o600, 0o755][i % 3]! });
    if (i % 77 !== 0) fs.utimesSync(name, 1_700_000_000.123 + i, 1_700_000_000.987654 + i * 3.3);
  }
}

/** What the small-folder path makes of each name: its lstat, as toVolumeEntry renders it. */
function expected(dir: string, except: readonly string[] = []): VolumeEntry[] {
  return fs
    .readdirSync(dir)
    .filter((name) => !except.includes(name))
    .map((name) => toVolumeEntry(name, fs.lstatSync(path.join(dir, name))));
}

const byName = (a: VolumeEntry, b: VolumeEntry) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

describe('listing a large folder through the lstat workers', () => {
  it('gives exactly what an lstat of each name gives, every entry once', async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-worker-listing-'));
    const dir = path.join(root, 'many');
    makeFolder(dir);
    const held = SafeDir.open(dir);
    try {
      const listed = await listFolder(held, 0);
      expect(listed).toHaveLength(ENTRIES);
      expect([...listed].sort(byName)).toEqual(expected(dir).sort(byName));
      expect(listed.filter((entry) => entry.isDirectory)).toHaveLength(Math.ceil(ENTRIES / 50));
      expect(listed.filter((entry) => entry.isSymlink).length).toBeGreaterThan(0);
    } finally {
      held.close();
    }
  });

  it('removes a stale temporary and keeps a fresh one, as a small folder does', async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-worker-listing-'));
    const dir = path.join(root, 'many');
    makeFolder(dir);
    const stale = temporaryName();
    const fresh = temporaryName();
    fs.writeFileSync(path.join(dir, stale), 'cut short');
    fs.utimesSync(path.join(dir, stale), 1_000_000, 1_000_000);
    fs.writeFileSync(path.join(dir, fresh), 'being written');
    const held = SafeDir.open(dir);
    try {
      const listed = await listFolder(held, Date.now() - 60_000);
      const names = new Set(listed.map((entry) => entry.name));
      expect(names.has(stale)).toBe(false);
      expect(fs.existsSync(path.join(dir, stale))).toBe(false);
      expect(names.has(fresh)).toBe(true);
      expect(listed).toHaveLength(ENTRIES + 1);
    } finally {
      held.close();
    }
  });

  it('lists the folder it holds, not what its path leads to once swapped for a link', async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-worker-listing-'));
    const dir = path.join(root, 'many');
    makeFolder(dir);
    // The decoy holds the same names, with other sizes: an lstat by path after the swap would report these.
    const decoy = path.join(root, 'decoy');
    fs.mkdirSync(decoy);
    for (const name of fs.readdirSync(dir)) fs.writeFileSync(path.join(decoy, name), 'decoy bytes, longer than any file');
    const held = SafeDir.open(dir);
    try {
      fs.renameSync(dir, path.join(root, 'moved'));
      fs.symlinkSync(decoy, dir);
      const listed = await listFolder(held, 0);
      expect([...listed].sort(byName)).toEqual(expected(path.join(root, 'moved')).sort(byName));
    } finally {
      held.close();
    }
  });
});
