/**
 * The all-or-nothing restore of a backup onto a volume (docs/reference/backups-and-restores.md#restoring): open, check,
 * extract into a staging folder, then merge. The reasoning behind each rule is
 * in docs/RESTORE.md.
 */
import { randomBytes } from 'node:crypto';
import { constants as fsConstants, readdirSync } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { normaliseSha1, sha1Of } from './checksum.js';
import type { ExtractLimits } from './extract/bounds.js';
import { extractArchive } from './extract/extract-archive.js';
import { crashPoint, crashPointArmed } from '../../../crash-point.js';
import { moveIntoVolume, newMerge } from '../restore/move-into-volume.js';
import { chownTree } from '../volume/volume-owner.js';
import { discardFolder } from '../restore/recover-restore.js';
import { restoreFolder, writeJournal, type RestoreFolder } from '../restore/restore-folder.js';
import { flushWhileStaging, syncFileSystem } from '../restore/sync-filesystem.js';
import { removeTree } from './remove-tree.js';
import { RestoreError, asRestoreError, errnoOrMessage, quote } from './restore-error.js';

function randomSuffix(): string {
  return randomBytes(6).toString('hex');
}

async function openArchive(archivePath: string): Promise<FileHandle> {
  const name = quote(path.basename(archivePath));
  let handle: FileHandle;
  try {
    // O_NONBLOCK: something other than a file at that path cannot hang the open.
    handle = await fs.open(archivePath, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch (err) {
    throw new RestoreError(`the backup archive ${name} cannot be read (${errnoOrMessage(err)})`, { cause: err });
  }
  const stat = await handle.stat().catch(async (err: unknown) => {
    await handle.close();
    throw new RestoreError(`the backup archive ${name} cannot be read (${errnoOrMessage(err)})`, { cause: err });
  });
  if (!stat.isFile()) {
    await handle.close();
    throw new RestoreError(`the backup archive ${name} is not a file`);
  }
  return handle;
}

/**
 * Restores archivePath onto volumeDir (docs/reference/backups-and-restores.md#restoring): checks the archive can be read
 * and, when expectedSha1 is given, that its sha1 matches; extracts it into a
 * staging folder beside the volume, refusing any unsafe entry; and only when
 * every entry extracted cleanly (and is on disk) empties the volume (truncate)
 * and moves the staged tree into it, journalled (docs/RESTORE.md "Crash
 * safety"), undoing that move if it fails halfway. Throws RestoreError for
 * every refusal and failure, with the volume as it was.
 *
 * `folder`: the restore's own folder, named after its database row. It is then
 * left in place after a success, for the caller to remove once the outcome is
 * recorded; without it, a random one is used and removed.
 */
export async function restoreArchive(opts: {
  archivePath: string;
  volumeDir: string;
  expectedSha1: string | null;
  truncate: boolean;
  folder?: RestoreFolder;
  /** Bounds on what the archive may expand to (docs/RESTORE.md "Bounded restores"). */
  limits?: ExtractLimits;
  /** Who the restored files belong to (a confined server's uid, docs/reference/containment.md); absent = the service's user. */
  owner?: { uid: number; gid: number };
}): Promise<void> {
  const volumeDir = path.resolve(opts.volumeDir);
  const expected = opts.expectedSha1 === null ? null : normaliseSha1(opts.expectedSha1);
  const archive = await openArchive(opts.archivePath);
  try {
    const volume = await fs.stat(volumeDir).catch(() => null);
    if (!volume?.isDirectory()) throw new RestoreError(`the volume ${quote(volumeDir)} is not a directory`);
    if (expected !== null) {
      const actual = await sha1Of(archive);
      if (actual !== expected) {
        throw new RestoreError(`the backup archive's sha1 ${actual} does not match the recorded checksum ${expected}`);
      }
    }
    const folder = opts.folder ?? restoreFolder(path.dirname(volumeDir), `${path.basename(volumeDir)}-${randomSuffix()}`);
    await stageAndMove(archive, volumeDir, opts.truncate, folder, opts.limits ?? {}, opts.owner);
    if (!opts.folder) await discardFolder(folder).catch(() => undefined);
  } finally {
    await archive.close();
  }
}

async function stageAndMove(
  archive: FileHandle,
  volumeDir: string,
  truncate: boolean,
  folder: RestoreFolder,
  limits: ExtractLimits,
  owner: { uid: number; gid: number } | undefined,
): Promise<void> {
  // Beside the volume, so every move into it is a rename on one file system.
  try {
    await fs.mkdir(folder.root, { mode: 0o700 });
  } catch (err) {
    throw asRestoreError(err, 'the staging folder could not be created');
  }
  try {
    await fs.mkdir(folder.staged);
  } catch (err) {
    await removeTree(folder.root).catch(() => undefined);
    throw asRestoreError(err, 'the staging folder could not be created');
  }
  let keepFolder = false;
  try {
    const stopWatching = watchForCrashWhileStaging(folder.staged);
    const stopFlushing = flushWhileStaging(folder.staged);
    try {
      await extractArchive(archive, folder.staged, limits);
    } finally {
      stopFlushing();
      stopWatching();
    }
    // In the staging folder, which only the service can reach: the server gets files it can change.
    if (owner) await chownTree(folder.staged, owner.uid, owner.gid);
    // Every staged file on disk before the journal says the move has begun.
    await syncFileSystem(folder.staged);
    crashPoint('restore-staged');

    const merge = newMerge(folder, volumeDir);
    try {
      await moveIntoVolume(folder, volumeDir, { version: 1, volume: path.basename(volumeDir), truncate }, merge);
      keepFolder = true;
    } catch (err) {
      const failure = asRestoreError(err, 'the restored files could not be moved into the volume');
      // A crash while undoing must replay to one of the two trees: once the undo is down to the truncate's
      // emptying, the volume holds only old entries again, which the journal's `emptying` phase says.
      const journal = { version: 1, volume: path.basename(volumeDir), truncate, phase: 'emptying' } as const;
      if (await merge.rollback(truncate ? () => writeJournal(folder, journal) : undefined)) throw failure;
      // Removing the folder now would destroy the volume's previous files, parked in it; its journal lets the next start finish the move.
      keepFolder = true;
      const message = `${failure.message}; undoing it failed too, the volume's previous files are in ${quote(folder.displaced)}`;
      throw new RestoreError(message, { cause: err });
    }
  } catch (err) {
    throw asRestoreError(err, 'the restore failed');
  } finally {
    // The volume is as it was: the journal goes first, so a crash meanwhile is never read as a move to finish.
    if (!keepFolder) await discardFolder(folder).catch(() => undefined);
  }
}

/** Test-only (QUETZAL_TEST_CRASH_AT=restore-staging): dies once extraction has written its first entry. */
function watchForCrashWhileStaging(staged: string): () => void {
  if (!crashPointArmed('restore-staging')) return () => undefined;
  const timer = setInterval(() => {
    if (readdirSync(staged).length > 0) crashPoint('restore-staging');
  }, 1);
  return () => clearInterval(timer);
}
