/**
 * How far a restore may go under a server's disk and inode limits (docs/reference/backups-and-restores.md#durability,
 * 10): the bounds the staging extraction checks on each entry, so that an
 * archive past them fails before the volume changes.
 */
import type { ServerLimits } from '../../daemon.js';
import { diskLimitBytes, inodeLimit, type VolumeUsage } from './disk-usage.js';

/** Measures the volume now. */
type MeasureVolume = () => Promise<VolumeUsage>;

/**
 * The bytes a restore may expand to; undefined without a limit. Truncate: the
 * limit, as the volume is emptied first. Merge: what the volume leaves of it
 * now; a file the archive overwrites is counted twice (its old and new size),
 * which can refuse a merge that would have fit, never let one past it.
 */
export async function restoreByteBound(
  limits: ServerLimits | undefined,
  truncate: boolean,
  measure: MeasureVolume,
): Promise<number | undefined> {
  const limit = diskLimitBytes(limits);
  if (limit === null) return undefined;
  if (truncate) return limit;
  const room = limit - (await measure()).bytes;
  // The bounds read 0 as "no limit"; the smallest positive number admits folders and empty files only.
  return room > 0 ? room : Number.MIN_VALUE;
}

/**
 * The entries a restore may add under the inode limit, with
 * RESTORE_MAX_ENTRIES: truncate, the limit less the volume's own folder;
 * merge, what the volume leaves of it now (an entry the archive replaces
 * counts twice: a merge that would fit can be refused, never one past the
 * limit let in). At least 1, as the bounds read 0 as "none".
 */
export async function restoreEntryBound(
  limits: ServerLimits | undefined,
  truncate: boolean,
  maxEntries: number | undefined,
  measure: MeasureVolume,
): Promise<number | undefined> {
  const limit = inodeLimit(limits);
  if (limit === null) return maxEntries;
  const used = truncate ? 1 : (await measure()).inodes;
  const room = Math.max(1, limit - used);
  return maxEntries === undefined ? room : Math.min(maxEntries, room);
}
