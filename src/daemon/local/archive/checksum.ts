/** The recorded sha1 of a backup and the check of an archive against it (docs/reference/backups-and-restores.md#restoring). */
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { RestoreError, errnoOrMessage, quote } from './restore-error.js';

/** Bytes per read when hashing an archive: fewer, larger reads. */
const CHUNK = 1024 * 1024;

/** Normalises a recorded checksum (`<hex>` or `sha1:<hex>`, any case) to lowercase hex. */
export function normaliseSha1(recorded: string): string {
  const hex = recorded
    .trim()
    .replace(/^sha1:/i, '')
    .toLowerCase();
  if (!/^[0-9a-f]{40}$/.test(hex)) throw new RestoreError(`the recorded checksum ${quote(recorded)} is not a sha1`);
  return hex;
}

export async function sha1Of(archive: FileHandle): Promise<string> {
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
    throw new RestoreError(`the backup archive cannot be read (${errnoOrMessage(err)})`, { cause: err });
  }
  return hash.digest('hex');
}
