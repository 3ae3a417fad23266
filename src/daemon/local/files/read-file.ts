/**
 * Reading a regular file of a volume (the editor's contents, downloads,
 * SFTP): opened from its held folder with O_NOFOLLOW, so a final entry that
 * is a link is refused, never followed; O_NONBLOCK, so a FIFO cannot hang
 * the open; then checked through the descriptor to be a regular file.
 */
import fs from 'node:fs';
import { VolumeFileError, type VolumeEntry } from '../../daemon.js';
import type { SafeDir } from '../volume/safe-dir.js';
import { errnoCode, volumeFileError } from './file-errors.js';
import { toVolumeEntry } from './volume-entry.js';

/** Opens a regular file of `dir` for reading; returns its descriptor and entry. */
export async function openRegularFile(
  dir: SafeDir,
  name: string,
  label: string,
  flags = fs.constants.O_RDONLY,
): Promise<{ fd: number; entry: VolumeEntry }> {
  let fd: number;
  try {
    fd = await dir.openFileAsync(name, flags | fs.constants.O_NONBLOCK);
  } catch (err) {
    throw refusal(dir, name, label, err);
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw new VolumeFileError('not-a-file', `"${label}" is not a regular file.`);
    return { fd, entry: toVolumeEntry(name, stat) };
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
}

/** Why an open failed, as the caller's error: a link is `not-a-file` (it is never followed). */
function refusal(dir: SafeDir, name: string, label: string, err: unknown): Error {
  const code = errnoCode(err);
  if (code === 'ELOOP') return new VolumeFileError('not-a-file', `"${label}" is a symlink; it is never followed.`);
  if (code === 'EISDIR') return new VolumeFileError('not-a-file', `"${label}" is a folder.`);
  if (code === 'ENXIO' && dir.lstat(name)?.isFIFO())
    return new VolumeFileError('not-a-file', `"${label}" is not a regular file.`);
  return volumeFileError(err, label);
}

/** The whole file; `too-large` when it is bigger than `maxBytes` (also if it grows past it while read). */
export async function readWholeFile(dir: SafeDir, name: string, label: string, maxBytes: number): Promise<Buffer> {
  const { fd, entry } = await openRegularFile(dir, name, label);
  try {
    if (entry.size > maxBytes) {
      throw new VolumeFileError('too-large', `"${label}" is ${entry.size} bytes; at most ${maxBytes} can be read this way.`);
    }
    const buffer = Buffer.allocUnsafe(Math.min(entry.size, maxBytes) + 1);
    let length = 0;
    for (;;) {
      const read = await new Promise<number>((resolve, reject) =>
        fs.read(fd, buffer, length, buffer.length - length, length, (err, n) => (err ? reject(err) : resolve(n))),
      );
      if (read === 0) break;
      length += read;
      if (length > maxBytes) throw new VolumeFileError('too-large', `"${label}" grew past ${maxBytes} bytes while it was read.`);
    }
    return buffer.subarray(0, length);
  } finally {
    fs.closeSync(fd);
  }
}
