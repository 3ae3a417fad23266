/**
 * An SFTP session's open file (docs/reference/files-and-sftp.md): opened from its held folder with
 * O_NOFOLLOW (a final link is refused, never followed) and O_NONBLOCK (a
 * FIFO cannot hang the open), checked to be a regular file through its
 * descriptor. A file it creates belongs to the server's uid. Writes that
 * make the file grow count the growth against the server's disk limit
 * before a byte is written.
 */
import fs from 'node:fs';
import { VolumeFileError, type OpenFlags, type VolumeEntry, type VolumeFileHandle } from '../../daemon.js';
import type { SafeDir } from '../volume/safe-dir.js';
import type { Reservation } from './disk-budget.js';
import { writeAt } from './entry-changes.js';
import { errnoCode, volumeFileError } from './file-errors.js';
import { NEW_FILE_MODE, giveToOwner, type Owner } from './ownership.js';
import { toVolumeEntry } from './volume-entry.js';

const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_APPEND, O_NONBLOCK } = fs.constants;

function accessFlags(flags: OpenFlags): number {
  const writes = flags.write || flags.append;
  if (flags.read && writes) return O_RDWR;
  return writes ? O_WRONLY : O_RDONLY;
}

/** Opens (and maybe creates) `name` in `dir` as SFTP's flags say. */
export async function openVolumeFile(
  dir: SafeDir,
  name: string,
  label: string,
  flags: OpenFlags,
  mode: number | undefined,
  owner: Owner,
  reserve: (bytes: number, inodes: number) => Promise<Reservation>,
): Promise<VolumeFileHandle> {
  const base = accessFlags(flags) | O_NONBLOCK | (flags.append ? O_APPEND : 0);
  const createMode = mode === undefined ? NEW_FILE_MODE : mode & 0o777;
  let fd: number | null = null;
  let created = false;
  if (flags.create) {
    // A new entry counts as one more against the inode limit.
    const reservation = await reserve(0, 1);
    try {
      fd = await dir.openFileAsync(name, base | O_CREAT | O_EXCL, createMode);
      created = true;
      reservation.commit();
    } catch (err) {
      reservation.release();
      if (errnoCode(err) !== 'EEXIST' || flags.exclusive) throw refusal(err, label);
    }
  }
  if (fd === null) {
    try {
      fd = await dir.openFileAsync(name, base);
    } catch (err) {
      throw refusal(err, label);
    }
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw new VolumeFileError('not-a-file', `"${label}" is not a regular file.`);
    if (created) {
      fs.fchmodSync(fd, createMode);
      giveToOwner(fd, owner);
    }
    if (flags.truncate && (flags.write || flags.append)) fs.ftruncateSync(fd, 0);
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
  return new VolumeFile(fd, name, flags, reserve);
}

function refusal(err: unknown, label: string): Error {
  if (errnoCode(err) === 'ELOOP') return new VolumeFileError('not-a-file', `"${label}" is a symlink; it is never followed.`);
  if (errnoCode(err) === 'EISDIR') return new VolumeFileError('not-a-file', `"${label}" is a folder.`);
  return volumeFileError(err, label);
}

class VolumeFile implements VolumeFileHandle {
  private closed = false;

  constructor(
    private readonly fd: number,
    private readonly name: string,
    private readonly flags: OpenFlags,
    private readonly reserve: (bytes: number, inodes: number) => Promise<Reservation>,
  ) {}

  private get append(): boolean {
    return this.flags.append;
  }

  async read(buffer: Buffer, position: number): Promise<number> {
    this.assertOpen();
    if (!this.flags.read) throw new VolumeFileError('invalid-path', `"${this.name}" was not opened for reading.`);
    return new Promise((resolve, reject) =>
      fs.read(this.fd, buffer, 0, buffer.length, position, (err, n) =>
        err ? reject(volumeFileError(err, this.name)) : resolve(n),
      ),
    );
  }

  async write(data: Buffer, position: number): Promise<void> {
    this.assertOpen();
    if (!this.flags.write && !this.flags.append) {
      throw new VolumeFileError('invalid-path', `"${this.name}" was not opened for writing.`);
    }
    if (!Number.isSafeInteger(position) || position < 0)
      throw new VolumeFileError('invalid-path', 'A write position must be 0 or more.');
    const size = fs.fstatSync(this.fd).size;
    const end = this.append ? size + data.length : position + data.length;
    const reservation = await this.reserve(Math.max(0, end - size), 0);
    try {
      for (let offset = 0; offset < data.length;) {
        // O_APPEND: the kernel writes at the end whatever the position says.
        offset += await writeAt(this.fd, data, offset, data.length - offset, this.append ? null : position + offset);
      }
      reservation.commit();
    } finally {
      reservation.release();
    }
  }

  async stat(): Promise<VolumeEntry> {
    this.assertOpen();
    return toVolumeEntry(this.name, fs.fstatSync(this.fd));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await new Promise<void>((resolve, reject) => fs.close(this.fd, (err) => (err ? reject(err) : resolve())));
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the file was closed');
  }
}
