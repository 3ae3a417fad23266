/**
 * Listing a folder and stat of one entry (docs/reference/files-and-sftp.md), through the held folder:
 * entries are read with readdir and each one lstat'ed by name inside the
 * held folder (/proc/self/fd/<fd>/<name>), so a link is reported as a link
 * and a folder swapped for a link after it was opened is still the folder
 * that was opened.
 *
 * Cost: 100,000 entries must list in full, fast. Names are read in batches
 * (fs.Dir), and a synchronous lstat of a
 * cached inode takes a microsecond or two, an async one a thread-pool round
 * trip ten times that, so the lstats run synchronously in slices of at most
 * SLICE_MS, between which the event loop runs (docs/PERFORMANCE.md "Files").
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { VolumeEntry } from '../../daemon.js';
import type { SafeDir } from '../volume/safe-dir.js';
import { errnoCode, volumeFileError } from './file-errors.js';
import { toVolumeEntry } from './volume-entry.js';
import { isStaleTemporary } from './temporary-names.js';

const SLICE_MS = 8;
/** Names fs.Dir reads from the kernel at once. */
const DIR_BUFFER = 512;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Every entry of the held folder; an entry removed between readdir and its
 * lstat is left out. Temporary files of writes cut short by a crash before
 * `staleBefore` (the service's start) are removed as they are met (see
 * temporary-names.ts).
 */
export async function listFolder(dir: SafeDir, staleBefore: number): Promise<VolumeEntry[]> {
  const entries: VolumeEntry[] = [];
  // Streamed (fs.Dir, a few hundred names per getdents): a 100,000-name readdir would hold the event loop as one block.
  const listing = fs.opendirSync(dir.path, { bufferSize: DIR_BUFFER });
  let sliceStart = performance.now();
  try {
    for (let dirent = listing.readSync(); dirent !== null; dirent = listing.readSync()) {
      const entry = lstatEntry(dir, dirent.name, staleBefore);
      if (entry) entries.push(entry);
      if (performance.now() - sliceStart >= SLICE_MS) {
        await nextTurn();
        sliceStart = performance.now();
      }
    }
  } finally {
    listing.closeSync();
  }
  return entries;
}

/** One listed name as an entry; null when it is gone, or a stale temporary now removed. */
function lstatEntry(dir: SafeDir, name: string, staleBefore: number): VolumeEntry | null {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(dir.entryPath(name));
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return null;
    throw err;
  }
  if (isStaleTemporary(name, stat, staleBefore)) {
    try {
      dir.unlink(name);
      return null;
    } catch {
      // Gone already, or not removable: listed as it is.
    }
  }
  return toVolumeEntry(name, stat);
}

/** One entry of the held folder, itself (a link is not followed). */
export function statEntry(dir: SafeDir, name: string, label: string): VolumeEntry {
  try {
    return toVolumeEntry(name, fs.lstatSync(dir.entryPath(name)));
  } catch (err) {
    throw volumeFileError(err, label);
  }
}
