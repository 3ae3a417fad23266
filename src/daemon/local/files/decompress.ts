/**
 * Unpacking an archive of a volume into a folder of it (docs/reference/files-and-sftp.md): `.tar.gz`
 * and `.tgz` and `.tar` through the restore's extraction (path safety,
 * bounds, links kept inside, device files and hard links refused), `.zip`
 * through zip-extract.ts by the same rules; anything else is `archive`.
 *
 * The archive is extracted into a staging folder beside the volume (in the
 * volumes folder, which no server's process can reach: one inside the volume
 * could be tampered with while the extraction writes into it), counted, given
 * to the server's uid, then merged into the target folder by the restore's
 * merge (archive/merge.ts: descriptor-relative, never through a link):
 * files replace files, folders merge, as Pterodactyl overwrites on
 * decompress. A merge that fails halfway is undone; what was replaced is
 * discarded once the merge is complete.
 *
 * Disk limit: the extraction is bounded by what the server may still add
 * (bytes and entries), checked on each entry before it is written; the
 * staged tree is then measured and reserved before anything enters the
 * volume, so concurrent work cannot together pass the limit either.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { VolumeFileError } from '../../daemon.js';
import { DEFAULT_MAX_ENTRIES, type ExtractLimits } from '../archive/extract/bounds.js';
import { extractArchive } from '../archive/extract/extract-archive.js';
import { VolumeMerge } from '../archive/merge.js';
import { removeTree } from '../archive/remove-tree.js';
import { RestoreError } from '../archive/restore-error.js';
import { measureDiskUsage } from '../volume/disk-usage.js';
import type { SafeDir } from '../volume/safe-dir.js';
import { chownTree } from '../volume/volume-owner.js';
import type { Reservation } from './disk-budget.js';
import { errnoCode, volumeFileError } from './file-errors.js';
import type { Owner } from './ownership.js';
import { extractZip } from './zip-extract.js';

/**
 * A staging folder older than this belongs to a decompress that was cut short
 * (a SIGKILL): no extraction runs that long, and another instance sharing the
 * data folder may be running one right now, so age, not ownership, decides.
 */
const STALE_STAGING_MS = 6 * 60 * 60 * 1000;

/**
 * Removes the staging folders of decompresses a crash cut short (at start).
 * What a crash mid-merge had already moved into the volume stays there, as a
 * decompress that stopped part way; what it had displaced is discarded, as it
 * would have been.
 */
export async function sweepStaleStaging(volumesDir: string, now = Date.now()): Promise<number> {
  const names = await fs.promises.readdir(volumesDir).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names.filter((n) => n.startsWith(DECOMPRESS_FOLDER_PREFIX))) {
    const folder = path.join(volumesDir, name);
    const stat = await fs.promises.lstat(folder).catch(() => null);
    if (!stat?.isDirectory() || now - stat.mtimeMs < STALE_STAGING_MS) continue;
    await removeTree(folder);
    removed++;
  }
  return removed;
}

export type ArchiveFormat = 'tar.gz' | 'tar' | 'zip';

/** Staging folders beside the volumes: `.decompress-<random>`. */
export const DECOMPRESS_FOLDER_PREFIX = '.decompress-';

/** The format an archive's name says, or `archive` when none is known. */
export function archiveFormat(name: string): ArchiveFormat {
  const lower = name.toLowerCase();
  if (lower.endsWith('.tar.gz') || lower.endsWith('.tgz')) return 'tar.gz';
  if (lower.endsWith('.tar')) return 'tar';
  if (lower.endsWith('.zip')) return 'zip';
  throw new VolumeFileError('archive', `"${name}" is not an archive this panel can unpack (.tar.gz, .tgz, .tar or .zip).`);
}

export interface DecompressJob {
  /** The folder the archive's entries go into. */
  readonly target: SafeDir;
  /** The folder holding the archive, and its name there. */
  readonly archiveDir: SafeDir;
  readonly archiveName: string;
  readonly label: string;
  /** A folder on the volume's file system that no server's process can reach (the volumes folder). */
  readonly stagingParent: string;
  /** What the server may still add: null = no limit. */
  readonly room: { bytes: number | null; inodes: number | null };
  readonly reserve: (bytes: number, inodes: number) => Promise<Reservation>;
  readonly owner: Owner;
}

export async function decompressArchive(job: DecompressJob): Promise<void> {
  const format = archiveFormat(job.archiveName);
  const archive = await openArchive(job);
  const folder = path.join(job.stagingParent, `${DECOMPRESS_FOLDER_PREFIX}${randomBytes(8).toString('hex')}`);
  const staged = path.join(folder, 'staged');
  try {
    fs.mkdirSync(folder, { mode: 0o700 });
    fs.mkdirSync(staged, { mode: 0o700 });
    await extract(archive, format, staged, limitsOf(job.room));
    const usage = await measureDiskUsage(staged);
    const reservation = await job.reserve(usage.bytes, usage.inodes);
    try {
      if (job.owner) await chownTree(staged, job.owner.uid, job.owner.gid);
      await merge(job.target, staged, path.join(folder, 'displaced'));
      reservation.commit();
    } finally {
      reservation.release();
    }
  } finally {
    await archive.close();
    await removeTree(folder).catch(() => undefined);
  }
}

function limitsOf(room: DecompressJob['room']): ExtractLimits {
  return {
    ...(room.bytes !== null ? { maxBytes: Math.max(room.bytes, 1) } : {}),
    maxEntries: room.inodes === null ? DEFAULT_MAX_ENTRIES : Math.min(room.inodes, DEFAULT_MAX_ENTRIES),
  };
}

async function openArchive(job: DecompressJob): Promise<fs.promises.FileHandle> {
  let handle: fs.promises.FileHandle;
  try {
    // Resolved inside the held folder; O_NOFOLLOW: an archive that is a link is refused.
    const flags = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;
    handle = await fs.promises.open(job.archiveDir.entryPath(job.archiveName), flags);
  } catch (err) {
    if (errnoCode(err) === 'ELOOP') throw new VolumeFileError('not-a-file', `"${job.label}" is a symlink; it is never followed.`);
    throw volumeFileError(err, job.label);
  }
  const stat = await handle.stat();
  if (!stat.isFile()) {
    await handle.close();
    throw new VolumeFileError('not-a-file', `"${job.label}" is not a regular file.`);
  }
  return handle;
}

async function extract(
  archive: fs.promises.FileHandle,
  format: ArchiveFormat,
  staged: string,
  limits: ExtractLimits,
): Promise<void> {
  try {
    if (format === 'zip') await extractZip(archive.fd, staged, limits);
    else await extractArchive(archive, staged, limits, format);
  } catch (err) {
    if (!(err instanceof RestoreError)) throw err;
    const message = err.message.replace(/^./, (c) => c.toUpperCase());
    // The bounds word a disk-limit refusal themselves; the entry bound is the inode limit when that is lower.
    const overLimit =
      /past the server's disk limit/.test(message) ||
      (limits.maxEntries !== DEFAULT_MAX_ENTRIES && /has more than \d+ entries/.test(message));
    throw new VolumeFileError(overLimit ? 'disk-limit' : 'archive', `${message}.`);
  }
}

/** Moves the staged tree into the target: files replace files, folders merge; undone if it fails halfway. */
async function merge(target: SafeDir, staged: string, displaced: string): Promise<void> {
  // `<held folder>/.`: the merge opens it by path with O_NOFOLLOW; the `.` keeps the magic link out of the last position.
  const merging = new VolumeMerge(`${target.path}/.`, displaced);
  try {
    await merging.mergeFrom(staged);
  } catch (err) {
    await merging.rollback();
    throw volumeFileError(err, 'the unpacked files');
  }
}
