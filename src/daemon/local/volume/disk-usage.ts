/**
 * How much disk a server's volume takes (docs/reference/containment.md's disk and inode limits,
 * `/resources`' disk_bytes): the space allocated to every entry of the tree
 * (st_blocks × 512: files, folders, symlinks, FIFOs, the volume's own folder)
 * and how many inodes they are, each inode once (hard links). What the
 * volume really costs the host: a sparse file counts the blocks it holds, an
 * empty file or a symlink one inode, a folder its blocks, so 450 MB of folders
 * and links are counted as they are (issue 18). A restore's expansion is still
 * bounded by the archive's apparent sizes (archive/extract/bounds.ts), which
 * for a restored tree is at least its data.
 *
 * The walk goes down descriptor-relative (SafeDir): each folder is opened
 * from its held parent with O_NOFOLLOW, so a folder the server's process
 * swaps for a symlink mid-walk is either walked as the real folder (opened
 * before the swap) or counted as a link; what a link points to is never
 * counted. Entries that vanish mid-walk are skipped.
 *
 * Cost: one lstat per entry, done synchronously (a cached lstat takes a
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

/** What a volume takes: allocated bytes and inodes, each inode once. */
export interface VolumeUsage {
  readonly bytes: number;
  readonly inodes: number;
}

/** The server's disk limit in bytes (`diskMiB` × 2^20), or null when it has none (absent or 0, docs/reference/containment.md's "unlimited"). */
export function diskLimitBytes(limits: ServerLimits | undefined): number | null {
  const mib = limits?.diskMiB ?? 0;
  return mib > 0 ? mib * MIB : null;
}

/** docs/reference/containment.md's default inode limit: one inode per 4 KiB of the disk limit. */
const BYTES_PER_DEFAULT_INODE = 4096;

/**
 * The server's inode limit, or null when it has none: `inodes` when set (0 =
 * unlimited), else one per 4 KiB of the disk limit (none without one).
 */
export function inodeLimit(limits: ServerLimits | undefined): number | null {
  const set = limits?.inodes;
  if (set !== undefined && set !== null) return set > 0 ? set : null;
  const bytes = diskLimitBytes(limits);
  return bytes === null ? null : Math.floor(bytes / BYTES_PER_DEFAULT_INODE);
}

/** Which limit `usage` passes, with both figures for a message; null within both. */
export function overLimit(usage: VolumeUsage, limits: ServerLimits | undefined): string | null {
  const bytes = diskLimitBytes(limits);
  if (bytes !== null && usage.bytes > bytes) return `${mibFigure(usage.bytes)} MiB of ${mibFigure(bytes)} MiB`;
  const inodes = inodeLimit(limits);
  if (inodes !== null && usage.inodes > inodes) return `${usage.inodes} files and folders of ${inodes}`;
  return null;
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

/** 512-byte units: what st_blocks counts, whatever the file system's block size. */
const BLOCK_UNIT = 512;

/** The running total of one walk. */
class Tally {
  bytes = 0;
  inodes = 0;
  /** Hard-linked inodes (`dev:ino`) and how many of their links are still to be met. */
  private readonly links = new Map<string, number>();
  private sliceStart = performance.now();

  /** Adds an entry of any kind (a folder's nlink counts its subfolders, not other names: folders are never hard-linked). */
  add(stat: fs.Stats): void {
    if (stat.nlink > 1 && !stat.isDirectory()) {
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
    this.bytes += stat.blocks * BLOCK_UNIT;
    this.inodes += 1;
  }

  /** Lets the event loop run when this slice of synchronous calls has lasted long enough. */
  async pace(): Promise<void> {
    if (performance.now() - this.sliceStart < SLICE_MS) return;
    await nextTurn();
    this.sliceStart = performance.now();
  }
}

const NOTHING: VolumeUsage = Object.freeze({ bytes: 0, inodes: 0 });

/** What the volume takes, measured now; nothing when the volume does not exist. */
export async function measureDiskUsage(volumeDir: string): Promise<VolumeUsage> {
  let root: SafeDir;
  try {
    root = SafeDir.open(volumeDir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return NOTHING;
    throw err;
  }
  const tally = new Tally();
  try {
    tally.add(fs.fstatSync(root.fd));
    await walk(root, tally, 1);
  } finally {
    root.close();
  }
  return { bytes: tally.bytes, inodes: tally.inodes };
}

/** Counts the entries of `dir` and walks its subfolders, depth-first. */
async function walk(dir: SafeDir, tally: Tally, depth: number): Promise<void> {
  const subfolders = await countEntries(dir, tally);
  for (const name of subfolders) {
    let child: SafeDir;
    try {
      child = dir.openDir(name);
    } catch (err) {
      if (!isGoneOrNotAFolder(err)) throw err;
      // Swapped since the listing: whatever took the folder's place (a file, a link) is counted itself.
      const now = dir.lstat(name);
      if (now && !now.isDirectory()) tally.add(now);
      continue;
    }
    try {
      if (depth >= MAX_DEPTH)
        throw new Error(`${child.label} is nested more than ${MAX_DEPTH} folders deep; its size is not measured`);
      // The folder as opened (not as listed): what is walked is what is counted.
      tally.add(fs.fstatSync(child.fd));
      await walk(child, tally, depth + 1);
    } finally {
      child.close();
    }
    await tally.pace();
  }
}

/** Counts every entry directly in `dir` but its subfolders (counted when opened); returns their names. */
async function countEntries(dir: SafeDir, tally: Tally): Promise<string[]> {
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
      if (entry.isDirectory()) {
        subfolders.push(entry.name);
      } else {
        // A file, link, FIFO... (or a type the listing did not say): its own lstat decides; a link is never followed.
        const stat = dir.lstat(entry.name);
        if (stat?.isDirectory()) subfolders.push(entry.name);
        else if (stat) tally.add(stat);
      }
      await tally.pace();
    }
  } finally {
    listing.closeSync();
  }
  return subfolders;
}

interface Measurement<T> {
  value: T;
  /** performance.now() when the walk that gave `value` began: its figure is at most this old. */
  startedAt: number;
}

/**
 * Measurements of volumes, kept per key (a server's uuid): a figure younger
 * than the caller's maxAge is reused, and callers asking while a walk of the
 * same key runs share it, so one volume is never walked twice at once however
 * often it is asked about.
 */
export class DiskUsageCache<T = VolumeUsage> {
  private readonly measured = new Map<string, Measurement<T>>();
  private readonly running = new Map<string, { promise: Promise<T>; startedAt: number }>();

  constructor(
    private readonly measure: (dir: string) => Promise<T> = measureDiskUsage as unknown as (dir: string) => Promise<T>,
  ) {}

  /**
   * What `dir` takes: the last figure when its walk began less than
   * `maxAgeMs` ago (0: never reused), else the walk in flight for `key` if
   * there is one (it began before this call: its figure can miss a change made
   * meanwhile, as any figure of a volume in use can), else a new walk.
   */
  async get(key: string, dir: string, maxAgeMs: number): Promise<T> {
    const now = performance.now();
    const last = this.measured.get(key);
    if (last !== undefined && now - last.startedAt < maxAgeMs) return last.value;
    const inFlight = this.running.get(key);
    if (inFlight !== undefined) return inFlight.promise;
    const run = { promise: this.measure(dir), startedAt: now };
    this.running.set(key, run);
    try {
      const value = await run.promise;
      // Only the latest walk records its figure: one forgotten meanwhile must not bring a stale figure back.
      if (this.running.get(key) === run) this.measured.set(key, { value, startedAt: run.startedAt });
      return value;
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
