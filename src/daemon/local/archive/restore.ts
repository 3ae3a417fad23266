/**
 * The all-or-nothing restore of a backup onto a volume (SPEC 4): open, check,
 * extract into a staging folder, then merge. The reasoning behind each rule is
 * in docs/RESTORE.md.
 */
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { normaliseSha1, sha1Of } from './checksum.js';
import { extractArchive } from './extract/extract-archive.js';
import { VolumeMerge } from './merge.js';
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
 * Restores archivePath onto volumeDir (SPEC 4): checks the archive can be read
 * and, when expectedSha1 is given, that its sha1 matches; extracts it into a
 * staging folder beside the volume, refusing any unsafe entry; and only when
 * every entry extracted cleanly empties the volume (truncate) and moves the
 * staged tree into it, undoing that move if it fails halfway. Throws
 * RestoreError for every refusal and failure, with the volume as it was.
 */
export async function restoreArchive(opts: {
  archivePath: string;
  volumeDir: string;
  expectedSha1: string | null;
  truncate: boolean;
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
    await stageAndMerge(archive, volumeDir, opts.truncate);
  } finally {
    await archive.close();
  }
}

async function stageAndMerge(archive: FileHandle, volumeDir: string, truncate: boolean): Promise<void> {
  // Beside the volume, so every move into it is a rename on one file system.
  const staging = path.join(path.dirname(volumeDir), `.restore-${path.basename(volumeDir)}-${randomSuffix()}`);
  try {
    await fs.mkdir(staging, { mode: 0o700 });
  } catch (err) {
    throw asRestoreError(err, 'the staging folder could not be created');
  }
  let keepStaging = false;
  try {
    const tree = path.join(staging, 'tree');
    const displaced = path.join(staging, 'displaced');
    await fs.mkdir(tree);
    await fs.mkdir(displaced);
    await extractArchive(archive, tree);

    const merge = new VolumeMerge(volumeDir, displaced);
    try {
      if (truncate) await merge.emptyVolume();
      await merge.mergeFrom(tree);
    } catch (err) {
      const failure = asRestoreError(err, 'the restored files could not be moved into the volume');
      if (await merge.rollback()) throw failure;
      // Removing the staging folder now would destroy the volume's previous files, parked in it.
      keepStaging = true;
      const message = `${failure.message}; undoing it failed too, the volume's previous files are in ${quote(displaced)}`;
      throw new RestoreError(message, { cause: err });
    }
  } catch (err) {
    throw asRestoreError(err, 'the restore failed');
  } finally {
    // Best effort: once the volume is restored, a leftover staging folder (outside the volume) must not fail the restore.
    if (!keepStaging) await removeTree(staging).catch(() => undefined);
  }
}
