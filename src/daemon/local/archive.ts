/**
 * The local daemon's backups: gzip tarballs of a server's volume (SPEC 7), and
 * the all-or-nothing restore of one onto the volume (SPEC 4). The reasoning
 * behind each rule is in docs/RESTORE.md.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants as fsConstants, createWriteStream } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants as zlibConstants, createGzip } from 'node:zlib';
import { asRestoreError, extractArchive } from './archive-extract.js';
import { VolumeMerge, removeTree } from './archive-merge.js';
import { RestoreError, normaliseSha1, quote } from './archive-safety.js';
import { IgnoreMatcher, tarStream } from './archive-write.js';

export { RestoreError } from './archive-safety.js';

export interface ArchiveResult {
  /** lowercase hex sha1 of the archive file */
  sha1: string;
  /** the archive file's size */
  bytes: number;
}

/** Bytes per read when hashing an archive: fewer, larger reads. */
const CHUNK = 1024 * 1024;

function randomSuffix(): string {
  return randomBytes(6).toString('hex');
}

function errorCode(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));
}

/**
 * Writes a gzip tarball of everything in volumeDir (paths relative to the
 * volume) to archivePath, skipping paths that match `ignore` (gitignore
 * syntax, one pattern per element, as Wings does). Streams: memory does not
 * grow with the volume. Writes to a temporary sibling file, flushed to disk,
 * and renames it on success, so a failed or aborted backup never leaves a
 * partial archive at archivePath. Symlinks are stored as symlinks, not followed.
 */
export async function createArchive(opts: {
  volumeDir: string;
  archivePath: string;
  ignore: string[];
  signal?: AbortSignal;
}): Promise<ArchiveResult> {
  const { volumeDir, archivePath, ignore, signal } = opts;
  signal?.throwIfAborted();
  const temporary = path.join(path.dirname(archivePath), `.${path.basename(archivePath)}.${randomSuffix()}.partial`);
  const hash = createHash('sha1');
  let bytes = 0;
  const measure = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  try {
    await pipeline(
      Readable.from(tarStream(volumeDir, new IgnoreMatcher(ignore), signal), { objectMode: false }),
      createGzip({ level: zlibConstants.Z_BEST_SPEED }),
      measure,
      createWriteStream(temporary, { flags: 'wx', mode: 0o600, flush: true }),
      signal ? { signal } : {},
    );
    await fs.rename(temporary, archivePath);
  } catch (err) {
    await fs.rm(temporary, { force: true }).catch(() => undefined);
    throw err;
  }
  return { sha1: hash.digest('hex'), bytes };
}

async function openArchive(archivePath: string): Promise<FileHandle> {
  const name = quote(path.basename(archivePath));
  let handle: FileHandle;
  try {
    // O_NONBLOCK: something other than a file at that path cannot hang the open.
    handle = await fs.open(archivePath, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch (err) {
    throw new RestoreError(`the backup archive ${name} cannot be read (${errorCode(err)})`, { cause: err });
  }
  const stat = await handle.stat().catch(async (err: unknown) => {
    await handle.close();
    throw new RestoreError(`the backup archive ${name} cannot be read (${errorCode(err)})`, { cause: err });
  });
  if (!stat.isFile()) {
    await handle.close();
    throw new RestoreError(`the backup archive ${name} is not a file`);
  }
  return handle;
}

async function sha1Of(archive: FileHandle): Promise<string> {
  const hash = createHash('sha1');
  // One buffer, read into again and again: a fresh buffer per read would leave the garbage collector a gigabyte to find.
  const buffer = Buffer.allocUnsafe(CHUNK);
  try {
    for (let position = 0; ;) {
      const { bytesRead } = await archive.read(buffer, 0, CHUNK, position);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
      position += bytesRead;
    }
  } catch (err) {
    throw new RestoreError(`the backup archive cannot be read (${errorCode(err)})`, { cause: err });
  }
  return hash.digest('hex');
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
