/**
 * Packing entries of a folder into a new `archive-<YYYY-MM-DDTHHmmss>.tar.gz`
 * in that folder (docs/reference/files-and-sftp.md; Pterodactyl names it `archive-{date}.tar.gz`).
 * The tar stream is the backups' own (archive/tar-stream.ts): each entry
 * walked descriptor-relative from the held folder, links stored as links,
 * nothing followed out of the volume. gzip level 1: compressing at level 1
 * costs a fraction of level 6 for archives a few percent larger
 * (docs/PERFORMANCE.md "Files").
 *
 * Written to a temporary file beside it, fsynced, then linked to its name
 * (link fails when the name is taken: nothing is replaced) and the temporary
 * removed. Its bytes count against the disk limit as they are written; past
 * it, the archive is abandoned and removed.
 */
import fs from 'node:fs';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { constants as zlibConstants, createGzip } from 'node:zlib';
import { VolumeFileError, type VolumeEntry } from '../../daemon.js';
import { tarStreamOfEntries } from '../archive/tar-stream.js';
import type { SafeDir } from '../volume/safe-dir.js';
import type { Reservation } from './disk-budget.js';
import { errnoCode } from './file-errors.js';
import { NEW_FILE_MODE, giveToOwner, type Owner } from './ownership.js';
import { temporaryName } from './temporary-names.js';
import { toVolumeEntry } from './volume-entry.js';

const GZIP_LEVEL = zlibConstants.Z_BEST_SPEED;
/** Names tried when archives of the same second exist. */
const MAX_NAMES = 100;

/** `archive-2026-11-26T103525.tar.gz` (UTC), then `archive-...-1.tar.gz`... when taken. */
export function archiveName(now: Date, n: number): string {
  const stamp = now.toISOString().slice(0, 19).replace(/:/g, '');
  return n === 0 ? `archive-${stamp}.tar.gz` : `archive-${stamp}-${n}.tar.gz`;
}

/** A Writable over a descriptor that counts each chunk against the reservation before writing it. */
function countedFile(fd: number, reservation: Reservation): Writable {
  let position = 0;
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      try {
        reservation.grow(chunk.length);
      } catch (err) {
        return done(err as Error);
      }
      const step = (offset: number) =>
        fs.write(fd, chunk, offset, chunk.length - offset, position + offset, (err, written) => {
          if (err) return done(err);
          if (offset + written < chunk.length) return step(offset + written);
          position += chunk.length;
          done();
        });
      step(0);
    },
  });
}

export async function compressEntries(
  dir: SafeDir,
  names: readonly string[],
  reservation: Reservation,
  owner: Owner,
  now = new Date(),
): Promise<{ name: string; entry: VolumeEntry }> {
  const missing = names.filter((name) => dir.lstat(name) === null);
  if (missing.length > 0) throw new VolumeFileError('not-found', `"${missing[0]}" does not exist.`);
  const temporary = temporaryName();
  const fd = dir.openFile(temporary, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, NEW_FILE_MODE);
  let linked: string | null = null;
  try {
    try {
      fs.fchmodSync(fd, NEW_FILE_MODE);
      giveToOwner(fd, owner);
      await pipeline(
        Readable.from(tarStreamOfEntries(dir, names), { objectMode: false }),
        createGzip({ level: GZIP_LEVEL }),
        countedFile(fd, reservation),
      );
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    linked = linkUnderFreeName(dir, temporary, now);
    return { name: linked, entry: toVolumeEntry(linked, fs.lstatSync(dir.entryPath(linked))) };
  } finally {
    try {
      dir.unlink(temporary);
    } catch {
      // Already gone.
    }
  }
}

function linkUnderFreeName(dir: SafeDir, temporary: string, now: Date): string {
  for (let n = 0; n < MAX_NAMES; n++) {
    const name = archiveName(now, n);
    try {
      fs.linkSync(dir.entryPath(temporary), dir.entryPath(name));
      return name;
    } catch (err) {
      if (errnoCode(err) !== 'EEXIST') throw err;
    }
  }
  throw new VolumeFileError('exists', 'Too many archives were made this second; try again.');
}
