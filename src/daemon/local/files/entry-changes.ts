/**
 * The changes of single entries (docs/reference/files-and-sftp.md): making a folder, moving an entry,
 * copying a file, setting permission bits. Each acts on the last segment
 * through its held parent folder with a call that does not follow a link
 * there: mkdir, rename/link, open with O_NOFOLLOW, chmod through an O_PATH
 * descriptor opened with O_NOFOLLOW.
 */
import fs from 'node:fs';
import { VolumeFileError } from '../../daemon.js';
import type { SafeDir } from '../volume/safe-dir.js';
import type { Reservation } from './disk-budget.js';
import { errnoCode, volumeFileError } from './file-errors.js';
import { copyName } from './copy-name.js';
import { giveToOwner, type Owner } from './ownership.js';
import { openRegularFile } from './read-file.js';

function readAt(fd: number, buffer: Buffer, position: number): Promise<number> {
  return new Promise((resolve, reject) =>
    fs.read(fd, buffer, 0, buffer.length, position, (err, n) => (err ? reject(err) : resolve(n))),
  );
}

export function writeAt(fd: number, data: Buffer, offset: number, length: number, position: number | null): Promise<number> {
  return new Promise((resolve, reject) =>
    fs.write(fd, data, offset, length, position, (err, written) => (err ? reject(err) : resolve(written))),
  );
}

/** Linux's O_PATH (not in Node's constants). */
const O_PATH = 0o10000000;
/** Names tried for a copy before giving up. */
const MAX_COPY_NAMES = 1000;
const COPY_CHUNK = 1024 * 1024;

/**
 * Moves `fromName` of `from` to `toName` of `to`, never replacing what is
 * there (`exists`). A file or link is moved with link(2) + unlink(2): link
 * fails with EEXIST atomically and does not follow a link. A folder is
 * renamed after a check: rename(2) would only replace an empty folder made
 * in between, never a file or a folder with contents.
 */
export function moveEntry(from: SafeDir, fromName: string, to: SafeDir, toName: string, labels: [string, string]): void {
  const source = from.lstat(fromName);
  if (source === null) throw new VolumeFileError('not-found', `"${labels[0]}" does not exist.`);
  if (to.lstat(toName) !== null) throw new VolumeFileError('exists', `"${labels[1]}" already exists.`);
  try {
    if (source.isDirectory()) {
      from.rename(fromName, to, toName);
      return;
    }
    fs.linkSync(from.entryPath(fromName), to.entryPath(toName));
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'EEXIST' || code === 'ENOTEMPTY') throw new VolumeFileError('exists', `"${labels[1]}" already exists.`);
    if (code === 'ENOENT') throw new VolumeFileError('not-found', `"${labels[0]}" does not exist.`);
    throw volumeFileError(err, labels[0]);
  }
  try {
    from.unlink(fromName);
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') throw err;
  }
}

/**
 * Copies a regular file beside itself under the first free copy name; the
 * copy is created with O_EXCL (never replacing anything), given to the
 * server's uid, its bytes counted against the disk limit. Returns its name.
 */
export async function copyFile(
  dir: SafeDir,
  name: string,
  label: string,
  reserve: (bytes: number) => Promise<Reservation>,
  owner: Owner,
): Promise<string> {
  const source = await openRegularFile(dir, name, label);
  try {
    const reservation = await reserve(source.entry.size);
    let copy: { fd: number; name: string } | null = null;
    try {
      copy = createCopy(dir, name, source.entry.mode & 0o777, label);
      giveToOwner(copy.fd, owner);
      const buffer = Buffer.allocUnsafe(COPY_CHUNK);
      let position = 0;
      for (;;) {
        // Asynchronous: a copy of a large file must not hold the event loop.
        const read = await readAt(source.fd, buffer, position);
        if (read === 0) break;
        // A source that grows while copied: the growth counts too.
        if (position + read > source.entry.size) reservation.grow(Math.min(read, position + read - source.entry.size));
        for (let offset = 0; offset < read;) offset += await writeAt(copy.fd, buffer, offset, read - offset, position + offset);
        position += read;
      }
      await new Promise<void>((resolve, reject) => fs.fsync(copy!.fd, (err) => (err ? reject(err) : resolve())));
      fs.closeSync(copy.fd);
      reservation.commit();
      return copy.name;
    } catch (err) {
      if (copy) {
        fs.closeSync(copy.fd);
        try {
          dir.unlink(copy.name);
        } catch {
          // Already gone.
        }
      }
      reservation.release();
      throw err;
    }
  } finally {
    fs.closeSync(source.fd);
  }
}

function createCopy(dir: SafeDir, name: string, mode: number, label: string): { fd: number; name: string } {
  const flags = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL;
  for (let n = 0; n < MAX_COPY_NAMES; n++) {
    const candidate = copyName(name, n);
    try {
      const fd = dir.openFile(candidate, flags, mode);
      fs.fchmodSync(fd, mode);
      return { fd, name: candidate };
    } catch (err) {
      if (errnoCode(err) === 'EEXIST') continue;
      throw volumeFileError(err, label);
    }
  }
  throw new VolumeFileError('exists', `"${label}" has ${MAX_COPY_NAMES} copies already.`);
}

/** Sets an entry's permission bits (0..0o777); a link is refused, never followed to its target. */
export function changeMode(dir: SafeDir, name: string, mode: number, label: string): void {
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o777) {
    throw new VolumeFileError(
      'invalid-path',
      `The mode must be a whole number from 0 to 777 (octal); setuid, setgid and sticky bits are not set.`,
    );
  }
  let handle: number;
  try {
    // O_PATH|O_NOFOLLOW: a handle on the entry itself, a link included, with no permission needed on it.
    handle = fs.openSync(dir.entryPath(name), O_PATH | fs.constants.O_NOFOLLOW);
  } catch (err) {
    throw volumeFileError(err, label);
  }
  try {
    if (fs.fstatSync(handle).isSymbolicLink()) {
      throw new VolumeFileError('invalid-path', `"${label}" is a symlink; its target's mode is never changed.`);
    }
    // chmod of /proc/self/fd/<O_PATH fd> changes the held entry itself.
    fs.chmodSync(`/proc/self/fd/${handle}`, mode);
  } finally {
    fs.closeSync(handle);
  }
}
