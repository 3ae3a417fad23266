/**
 * Making a backup: a gzip tarball of a server's volume (docs/reference/schedules.md#running-schedules), all or
 * nothing on disk. The reasoning behind each rule is in docs/RESTORE.md.
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants as zlibConstants, createGzip } from 'node:zlib';
import { IgnoreMatcher } from './ignore-matcher.js';
import { tarStream } from './tar-stream.js';

export interface ArchiveResult {
  /** lowercase hex sha1 of the archive file */
  sha1: string;
  /** the archive file's size */
  bytes: number;
}

function randomSuffix(): string {
  return randomBytes(6).toString('hex');
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
  const output = createWriteStream(temporary, { flags: 'wx', mode: 0o600, flush: true });
  try {
    await pipeline(
      Readable.from(tarStream(volumeDir, new IgnoreMatcher(ignore), signal), { objectMode: false }),
      createGzip({ level: zlibConstants.Z_BEST_SPEED }),
      measure,
      output,
      signal ? { signal } : {},
    );
    await fs.rename(temporary, archivePath);
  } catch (err) {
    // A pipeline that fails at once rejects while the file's open may still be on the thread pool: removed
    // before that open ends, the temporary would be created after it and stay. Its close comes after the open.
    if (!output.closed) await once(output, 'close').catch(() => undefined);
    await fs.rm(temporary, { force: true }).catch(() => undefined);
    throw err;
  }
  return { sha1: hash.digest('hex'), bytes };
}
