/**
 * How much disk a server's volume uses (SPEC 10's disk limit, `/resources`'
 * disk_bytes): the apparent size (st_size) of every regular file in the tree,
 * each inode once (hard links), folders and symlinks not counted. That is
 * what Wings reports and what a restore's expansion is counted in
 * (archive/extract/bounds.ts: tar sizes), so "the disk limit" means one
 * thing: a sparse file counts at its full size, as it would when restored.
 *
 * The walk goes down descriptor-relative (SafeDir): each folder is opened
 * from its held parent with O_NOFOLLOW, so a folder the server's process
 * swaps for a symlink mid-walk is either walked as the real folder (opened
 * before the swap) or skipped as a link; what a link points to is never
 * counted. Entries that vanish mid-walk are skipped.
 *
 * Cost: one lstat per file, done synchronously (a cached lstat takes a
 * microsecond or two, an async one a thread-pool round trip ten times that),
 * in slices of at most SLICE_MS between which the walk yields to the event
 * loop. Memory: listings are streamed (fs.Dir), so what is held is one open
 * folder per level of the current path, the names of the subfolders of the
 * folders on that path, and the inodes of hard-linked files not yet seen
 * through all their links.
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { ServerLimits } from '../../daemon.js';
import { SafeDir } from './safe-dir.js';

/** Longest run of synchronous file-system calls before the walk lets other work run. */
const SLICE_MS = 5;
/** Entries fs.Dir reads from the kernel at once. */
const DIR_BUFFER = 256;
/**
 * Deepest nesting walked: one descriptor is held per level, so an endlessly
 * nested tree would otherwise exhaust them. A path that deep is far past
 * PATH_MAX; only a deliberate tree gets there, and it is refused, not
 * under-counted.
 */
export const MAX_DEPTH = 1024;

const MIB = 1024 * 1024;

/** The server's disk limit in bytes (`diskMiB` × 2^20), or null when it has none (absent or 0, SPEC 10's "unlimited"). */
export function diskLimitBytes(limits: ServerLimits | undefined): number | null {
  const mib = limits?.diskMiB ?? 0;
  return mib > 0 ? mib * MIB : null;
}

/** Bytes as whole MiB for a message, rounded up: a volume over its limit never reads as "10 MiB of 10 MiB". */
export function mibFigure(bytes: number): number {
  return Math.ceil(bytes / MIB);
}

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

/** Gone since it was listed, or no longer a folder (a link or a file took its place). */
function isGoneOrNotAFolder(err: unknown): boolean {
  const code = errnoCode(err);
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP';
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The running total of one walk. */
class Tally {
  bytes = 0;
  /** Hard-linked inodes (`dev:ino`) and how many of their links are still to be met. */
  private readonly links = new Map<string, number>();
  private sliceStart = performance.now();

  /** Adds a regular file, once per inode. */
  addFile(stat: fs.Stats): void {
    if (stat.nlink > 1) {
      const key = `${stat.dev}:${stat.ino}`;
      const left = this.links.get(key);
      if (left !== undefined) {
        // Seen through another link: counted already. Forgotten once every link was met, so memory stays small.
        if (left <= 1) this.links.delete(key);
        else this.links.set(key, left - 1);
        return;
      }
      this.links.set(key, stat.nlink - 1);
    }
    this.bytes += stat.size;
  }

  /** Lets the event loop run when this slice of synchronous calls has lasted long enough. */
  async pace(): Promise<void> {
    if (performance.now() - this.sliceStart < SLICE_MS) return;
    await nextTurn();
    this.sliceStart = performance.now();
  }
}

/** Bytes the volume uses, measured now; 0 when the volume does not exist. */
export async function measureDiskUsage(volumeDir: string): Promise<number> {
  let root: SafeDir;
  try {
    root = SafeDir.open(volumeDir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return 0;
    throw err;
  }
  const tally = new Tally();
  try {
    await walk(root, tally, 1);
  } finally {
    root.close();
  }
  return tally.bytes;
}

/** Counts the files of `dir` and walks its subfolders, depth-first. */
async function walk(dir: SafeDir, tally: Tally, depth: number): Promise<void> {
  const subfolders = await countFiles(dir, tally);
  for (const name of subfolders) {
    let child: SafeDir;
    try {
      child = dir.openDir(name);
    } catch (err) {
      if (!isGoneOrNotAFolder(err)) throw err;
      // Swapped since the listing: a file that took the folder's place counts, a link does not.
      const now = dir.lstat(name);
      if (now?.isFile()) tally.addFile(now);
      continue;
    }
    try {
      if (depth >= MAX_DEPTH)
        throw new Error(`${child.label} is nested more than ${MAX_DEPTH} folders deep; its size is not measured`);
      await walk(child, tally, depth + 1);
    } finally {
      child.close();
    }
    await tally.pace();
  }
}

/** Adds up the regular files directly in `dir`; returns the names of its subfolders. */
async function countFiles(dir: SafeDir, tally: Tally): Promise<string[]> {
  const subfolders: string[] = [];
  let listing: fs.Dir;
  try {
    // Reads the held folder itself (/proc/self/fd/<fd>), never a path from the volume's root.
    listing = fs.opendirSync(dir.path, { bufferSize: DIR_BUFFER });
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return subfolders; // removed since it was opened
    throw err;
  }
  try {
    for (let entry = listing.readSync(); entry !== null; entry = listing.readSync()) {
      // A link is never counted nor followed; a folder is opened (refusing a link) by walk().
      if (entry.isSymbolicLink()) continue;
      if (entry.isDirectory()) {
        subfolders.push(entry.name);
      } else {
        // A file (or a type the listing did not say): its own lstat decides.
        const stat = dir.lstat(entry.name);
        if (stat?.isFile()) tally.addFile(stat);
        else if (stat?.isDirectory()) subfolders.push(entry.name);
      }
      await tally.pace();
    }
  } finally {
    listing.closeSync();
  }
  return subfolders;
}

interface Measurement {
  bytes: number;
  /** performance.now() when the walk that gave `bytes` began: its figure is at most this old. */
  startedAt: number;
}

/**
 * Measurements of volumes, kept per key (a server's uuid): a figure younger
 * than the caller's maxAge is reused, and callers asking while a walk of the
 * same key runs share it, so one volume is never walked twice at once however
 * often it is asked about.
 */
export class DiskUsageCache {
  private readonly measured = new Map<string, Measurement>();
  private readonly running = new Map<string, { promise: Promise<number>; startedAt: number }>();

  constructor(private readonly measure: (dir: string) => Promise<number> = measureDiskUsage) {}

  /**
   * The bytes `dir` uses: the last figure when its walk began less than
   * `maxAgeMs` ago (0: never reused), else the walk in flight for `key` if
   * there is one (it began before this call: its figure can miss a change made
   * meanwhile, as any figure of a volume in use can), else a new walk.
   */
  async get(key: string, dir: string, maxAgeMs: number): Promise<number> {
    const now = performance.now();
    const last = this.measured.get(key);
    if (last !== undefined && now - last.startedAt < maxAgeMs) return last.bytes;
    const inFlight = this.running.get(key);
    if (inFlight !== undefined) return inFlight.promise;
    const run = { promise: this.measure(dir), startedAt: now };
    this.running.set(key, run);
    try {
      const bytes = await run.promise;
      // Only the latest walk records its figure: one forgotten meanwhile must not bring a stale figure back.
      if (this.running.get(key) === run) this.measured.set(key, { bytes, startedAt: run.startedAt });
      return bytes;
    } finally {
      if (this.running.get(key) === run) this.running.delete(key);
    }
  }

  /** Drops what is known about `key` (its volume changed, or the server is gone): the next get walks again. */
  forget(key: string): void {
    this.measured.delete(key);
    this.running.delete(key);
  }
}
