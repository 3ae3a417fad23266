/**
 * Listing a folder and stat of one entry (docs/reference/files-and-sftp.md), through the held folder:
 * entries are read with readdir and each one lstat'ed by name inside the
 * held folder (/proc/self/fd/<fd>/<name>), so a link is reported as a link
 * and a folder swapped for a link after it was opened is still the folder
 * that was opened.
 *
 * Cost: 100,000 entries must list in full, fast. Names are read in batches
 * (fs.Dir). A small folder's lstats run synchronously (one of a cached inode
 * takes a microsecond or two, an async one a thread-pool round trip ten
 * times that); a folder of more than WORKER_THRESHOLD names has its lstats
 * done in batches by worker threads (lstat-pool.ts), on the other core,
 * while this thread reads the next names and turns answered batches into
 * entries. Either way the event loop runs at least every SLICE_MS
 * (docs/PERFORMANCE.md "Files").
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { VolumeEntry } from '../../daemon.js';
import type { SafeDir } from '../volume/safe-dir.js';
import { errnoCode, volumeFileError } from './file-errors.js';
import { lstatInWorker, STAT_FIELDS, type LstatBatch } from './lstat-pool.js';
import { toVolumeEntry } from './volume-entry.js';
import { isStaleTemporary, isTemporaryName } from './temporary-names.js';

const SLICE_MS = 8;
/** Names fs.Dir reads from the kernel at once. */
const DIR_BUFFER = 512;
/** A folder of more names than this has its lstats done by worker threads; a smaller one here, at once. */
const WORKER_THRESHOLD = 2048;
/** Names per batch sent to a worker. */
const WORKER_BATCH = 1024;
const S_IFMT = 0o170000;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Every entry of the held folder; an entry removed between readdir and its
 * lstat is left out. Temporary files of writes cut short by a crash before
 * `staleBefore` (the service's start) are removed as they are met (see
 * temporary-names.ts).
 */
export async function listFolder(dir: SafeDir, staleBefore: number): Promise<VolumeEntry[]> {
  const names: string[] = [];
  const batches: SentBatch[] = [];
  const entries: VolumeEntry[] = [];
  let converted = 0;
  let failure: { error: unknown } | null = null;
  const sendBatch = (count: number) => {
    const batch: SentBatch = { names: names.splice(0, count), settled: Promise.resolve(), done: false };
    // Never rejects: a failure is kept until every batch is in (an unawaited rejection would be unhandled).
    batch.settled = lstatInWorker(dir.path, batch.names).then(
      (answer) => Object.assign(batch, { answer, done: true }),
      (error: unknown) => Object.assign(batch, { error, done: true }),
    );
    batches.push(batch);
  };
  /** Answered batches, in order, become entries until `until` (performance.now()); Wings' order within each is kept. */
  const convertAnswered = (until: number) => {
    while (converted < batches.length && batches[converted]!.done && performance.now() < until) {
      const batch = batches[converted++]!;
      if (batch.answer === undefined) failure ??= { error: batch.error };
      else if (failure === null)
        for (const entry of batchEntries(dir, batch.names, batch.answer, staleBefore)) entries.push(entry);
    }
  };
  // Streamed (fs.Dir, a few hundred names per getdents): a 100,000-name readdir would hold the event loop as one block.
  const listing = fs.opendirSync(dir.path, { bufferSize: DIR_BUFFER });
  let sliceStart = performance.now();
  try {
    for (let dirent = listing.readSync(); dirent !== null; dirent = listing.readSync()) {
      names.push(dirent.name);
      if (names.length > WORKER_THRESHOLD || (batches.length > 0 && names.length >= WORKER_BATCH)) {
        while (names.length >= WORKER_BATCH) sendBatch(WORKER_BATCH);
      }
      if (performance.now() - sliceStart >= SLICE_MS) {
        await nextTurn();
        convertAnswered(performance.now() + SLICE_MS / 2);
        sliceStart = performance.now();
      }
    }
  } finally {
    listing.closeSync();
  }
  if (batches.length === 0) return lstatHere(dir, names, staleBefore);
  if (names.length > 0) sendBatch(names.length);
  // The rest as they are answered, in slices: answers that arrived together are not one long block. Every batch is
  // awaited before the folder is released: a worker must not lstat through a descriptor number reused since.
  while (converted < batches.length) {
    await batches[converted]!.settled;
    convertAnswered(performance.now() + SLICE_MS);
    if (converted < batches.length && batches[converted]!.done) await nextTurn();
  }
  if (failure !== null) throw (failure as { error: unknown }).error;
  return entries;
}

/** A batch of names sent to a worker; `done` once its answer (or its failure) is in. */
interface SentBatch {
  readonly names: string[];
  settled: Promise<unknown>;
  done: boolean;
  answer?: LstatBatch;
  error?: unknown;
}

/** A small folder's entries, lstat'ed on this thread in slices of at most SLICE_MS. */
async function lstatHere(dir: SafeDir, names: readonly string[], staleBefore: number): Promise<VolumeEntry[]> {
  const entries: VolumeEntry[] = [];
  let sliceStart = performance.now();
  for (const name of names) {
    const entry = lstatEntry(dir, name, staleBefore);
    if (entry) entries.push(entry);
    if (performance.now() - sliceStart >= SLICE_MS) {
      await nextTurn();
      sliceStart = performance.now();
    }
  }
  return entries;
}

/**
 * A worker's answer as entries, in the order it sorted them: what
 * toVolumeEntry makes of a Stats (Node rounds a time to whole milliseconds
 * for its Date, as here); a name gone since the readdir left out, a stale
 * temporary removed (lstatEntry's rules).
 */
function batchEntries(dir: SafeDir, names: readonly string[], answer: LstatBatch, staleBefore: number): VolumeEntry[] {
  const { stats, order } = answer;
  const entries: VolumeEntry[] = [];
  for (const i of order) {
    const at = i * STAT_FIELDS;
    const mode = stats[at]!;
    if (mode === -1) continue;
    const name = names[i]!;
    const type = mode & S_IFMT;
    const birthtimeMs = stats[at + 2]!;
    const mtimeMs = stats[at + 4]!;
    const isFile = type === fs.constants.S_IFREG;
    if (isFile && isTemporaryName(name) && mtimeMs < staleBefore && removed(dir, name)) continue;
    entries.push({
      name,
      mode,
      size: stats[at + 1]!,
      isFile,
      isDirectory: type === fs.constants.S_IFDIR,
      isSymlink: type === fs.constants.S_IFLNK,
      createdAt: new Date(Math.round(birthtimeMs > 0 ? birthtimeMs : stats[at + 3]!)),
      modifiedAt: new Date(Math.round(mtimeMs)),
    });
  }
  return entries;
}

/** Removes a stale temporary; false when it cannot be (gone already, or not removable: then listed as it is). */
function removed(dir: SafeDir, name: string): boolean {
  try {
    dir.unlink(name);
    return true;
  } catch {
    return false;
  }
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
