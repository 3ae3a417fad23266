/**
 * The bounds on what a restore may expand to (docs/reference/backups-and-restores.md#durability, docs/RESTORE.md
 * "Limits"): entries, bytes against the server's disk limit, and bytes
 * against the free space of the file system the volume is on. Checked on
 * each entry's header, before anything is written for it, so a small archive
 * (a gzip of zeros, a header claiming terabytes) cannot fill a disk: the
 * extraction stops at the first entry past a bound, with at most the bytes
 * below the bound staged, and the volume untouched.
 *
 * Sizes come from the tar headers (pax `size` included). A file is restored
 * as the bytes stored for it, so a sparse file counts at its full size (our
 * backups store sparse files as their full contents; GNU sparse entries are
 * refused outright).
 */
import fs from 'node:fs';
import type { ReadEntry } from 'tar';
import { RestoreError, quote } from '../restore-error.js';

/** The default of RESTORE_MAX_ENTRIES. */
export const DEFAULT_MAX_ENTRIES = 1_000_000;
const MIB = 1024 * 1024;
/** The free space a restore must leave on the volume's file system, at least. */
const MIN_FREE_MARGIN = 256 * MIB;
/** ... or this share of the file system, when that is more. */
const FREE_MARGIN_SHARE = 0.05;

/** What a restore may expand to; the free space of the file system is always a bound. */
export interface ExtractLimits {
  /** Entries the archive may hold (RESTORE_MAX_ENTRIES); default 1,000,000. */
  maxEntries?: number;
  /** Bytes the files may add up to (the server's disk limit, docs/reference/containment.md); none when absent or 0 (docs/reference/containment.md's "unlimited"). */
  maxBytes?: number;
}

/** The free space a restore must leave on a file system of `totalBytes`: max(256 MiB, 5%). */
export function freeSpaceMargin(totalBytes: number): number {
  return Math.max(MIN_FREE_MARGIN, Math.floor(totalBytes * FREE_MARGIN_SHARE));
}

function mib(bytes: number): string {
  return `${(bytes / MIB).toFixed(1)} MiB`;
}

/** Counts entries and bytes as the parser hands them over; throws a RestoreError at the first one past a bound. */
export class ExtractionBounds {
  private entries = 0;
  private bytes = 0;
  private diskBytes = 0;
  private readonly maxEntries: number;
  private readonly maxBytes: number | undefined;
  /** Bytes the staged files may take on disk: the file system's free space less the margin. */
  private readonly freeBytes: number;
  private readonly margin: number;
  private readonly blockSize: number;

  /** `stagingRoot`: a folder on the volume's file system (the staging folder beside it). */
  constructor(stagingRoot: string, limits: ExtractLimits = {}) {
    this.maxEntries = limits.maxEntries ?? DEFAULT_MAX_ENTRIES;
    this.maxBytes = limits.maxBytes === 0 ? undefined : limits.maxBytes;
    // One statfs per restore: the check on each entry is then arithmetic.
    const space = fs.statfsSync(stagingRoot);
    this.blockSize = Math.max(space.bsize, 512);
    this.margin = freeSpaceMargin(space.blocks * space.bsize);
    this.freeBytes = space.bavail * space.bsize - this.margin;
  }

  /** Admits one entry (any type, as the parser emits it) or throws a RestoreError naming the bound it passes. */
  admit(entry: Pick<ReadEntry, 'path' | 'size'>): void {
    this.entries += 1;
    if (this.entries > this.maxEntries) {
      throw new RestoreError(
        `the archive has more than ${this.maxEntries} entries (RESTORE_MAX_ENTRIES); it is refused at ${quote(entry.path)}`,
      );
    }
    const size = entry.size;
    if (!(size > 0)) return;
    this.bytes += size;
    if (this.maxBytes !== undefined && this.bytes > this.maxBytes) {
      throw new RestoreError(
        `the archive expands past the server's disk limit of ${mib(this.maxBytes)} (at ${quote(entry.path)}, ${mib(this.bytes)} so far)`,
      );
    }
    // On disk a file takes whole blocks.
    this.diskBytes += Math.ceil(size / this.blockSize) * this.blockSize;
    if (this.diskBytes > this.freeBytes) {
      throw new RestoreError(
        `the archive expands past the free space of the volume's file system (at ${quote(entry.path)}, ${mib(this.diskBytes)} so far; ` +
          `${mib(Math.max(this.freeBytes, 0))} may be used, keeping ${mib(this.margin)} free)`,
      );
    }
  }
}
