/**
 * Creating or replacing a regular file of a volume (uploads, the editor,
 * installs): written under a temporary name beside the target
 * (temporary-names.ts), fsynced, then renamed over the target, all through
 * the held parent folder. A failure or an abort removes the temporary file;
 * a SIGKILL at any instant leaves the old file (or none) or the new one at
 * the target, plus at most the temporary file, which a later listing sweeps.
 *
 * Every byte counts against the server's disk limit (disk-budget.ts): the
 * size the caller announces before a byte is read, and the bytes as they
 * arrive, the write stopped (and its temporary removed) at the first chunk
 * that would pass the limit. The stream is then left as it is, for the
 * caller to end.
 */
import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { VolumeFileError, type VolumeEntry } from '../../daemon.js';
import type { SafeDir } from '../volume/safe-dir.js';
import type { Reservation } from './disk-budget.js';
import { volumeFileError } from './file-errors.js';
import { NEW_FILE_MODE, giveToOwner, type Owner } from './ownership.js';
import { temporaryName } from './temporary-names.js';
import { toVolumeEntry } from './volume-entry.js';

const NEW_FILE = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL;

/** Writes all of `chunks` at `position` (one writev; a short write is finished by plain writes). */
function writeAll(fd: number, chunks: readonly Buffer[], position: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const rest = (buffer: Buffer, at: number) =>
      fs.write(fd, buffer, 0, buffer.length, at, (err, written) => {
        if (err) return reject(err);
        if (written < buffer.length) return rest(buffer.subarray(written), at + written);
        resolve();
      });
    fs.writev(fd, chunks, position, (err, written) => {
      if (err) return reject(err);
      const total = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
      if (written < total) return rest(Buffer.concat(chunks).subarray(written), position + written);
      resolve();
    });
  });
}

/**
 * Bytes gathered before a write is issued. The body arrives in chunks of
 * 16–64 KiB; one write each was a thread-pool round trip and a syscall per
 * chunk, with the socket idle meanwhile. Gathered, one write is in flight
 * while the next batch is read: at most two batches are held (memory flat).
 */
const BATCH_BYTES = 4 * 1024 * 1024;
/** Bytes written between two early write-backs. */
const FLUSH_BYTES = 64 * 1024 * 1024;

/** Writes a stream's chunks in order at increasing offsets, one batch in flight while the next gathers. */
class BatchedWriter {
  private batch: Buffer[] = [];
  private batchBytes = 0;
  private position = 0;
  private inFlight: Promise<void> = Promise.resolve();
  private flushing: Promise<void> = Promise.resolve();
  private flushedUpTo = 0;

  constructor(private readonly fd: number) {}

  async add(chunk: Buffer): Promise<void> {
    this.batch.push(chunk);
    this.batchBytes += chunk.length;
    if (this.batchBytes >= BATCH_BYTES) await this.issue();
  }

  /** Waits for the write in flight (surfacing its error), then starts the gathered batch's. */
  private async issue(): Promise<void> {
    await this.inFlight;
    const batch = this.batch;
    const at = this.position;
    this.position += this.batchBytes;
    this.batch = [];
    this.batchBytes = 0;
    this.inFlight = writeAll(this.fd, batch, at);
    // Awaited by the next issue or by finish; marked handled meanwhile.
    this.inFlight.catch(() => {});
    if (this.position - this.flushedUpTo >= FLUSH_BYTES) await this.startFlush();
  }

  /**
   * Starts writing back what was written so far (fdatasync, in the thread
   * pool) while more is read: the final fsync before the rename then finds
   * little left to write, where it used to wait for the whole file.
   */
  private async startFlush(): Promise<void> {
    await this.flushing;
    this.flushedUpTo = this.position;
    this.flushing = new Promise<void>((resolve, reject) => fs.fdatasync(this.fd, (err) => (err ? reject(err) : resolve())));
    this.flushing.catch(() => {});
  }

  /** Writes what is left and waits for every write. */
  async finish(): Promise<void> {
    if (this.batchBytes > 0) await this.issue();
    await this.inFlight;
    await this.flushing;
  }

  /** Waits for the write in flight, its error ignored (the write failed anyway). */
  async settle(): Promise<void> {
    await this.inFlight.catch(() => {});
    await this.flushing.catch(() => {});
  }
}

const fsync = (fd: number) => new Promise<void>((resolve, reject) => fs.fsync(fd, (err) => (err ? reject(err) : resolve())));

/**
 * Writes `content` to `name` in `dir`, replacing a regular file there (its
 * permission bits are kept); a folder or a link there is refused. The
 * reservation (already holding the announced size, if any) grows as the
 * bytes arrive past it; it is committed by the caller on success.
 */
export async function writeFileAtomically(
  dir: SafeDir,
  name: string,
  label: string,
  content: Readable | Buffer,
  reservation: Reservation,
  reserved: number,
  owner: Owner,
): Promise<VolumeEntry> {
  const existing = dir.lstat(name);
  if (existing?.isSymbolicLink())
    throw new VolumeFileError('not-a-file', `"${label}" is a symlink; it is never written through.`);
  if (existing && !existing.isFile()) throw new VolumeFileError('not-a-file', `"${label}" is not a regular file.`);
  const temporary = temporaryName();
  let fd: number;
  try {
    fd = await dir.openFileAsync(temporary, NEW_FILE, NEW_FILE_MODE);
  } catch (err) {
    throw volumeFileError(err, label);
  }
  let renamed = false;
  let finished: fs.Stats;
  try {
    try {
      fs.fchmodSync(fd, existing ? existing.mode & 0o777 : NEW_FILE_MODE);
      giveToOwner(fd, owner);
      let received = 0;
      const writer = new BatchedWriter(fd);
      try {
        const chunks: AsyncIterable<Buffer> | Buffer[] = Buffer.isBuffer(content) ? [content] : content;
        for await (const raw of chunks) {
          const chunk = typeof raw === 'string' ? Buffer.from(raw) : raw;
          // Counted before it is written: past the limit, not one byte of it lands.
          const beyond = received + chunk.length - reserved;
          if (beyond > 0) reservation.grow(Math.min(beyond, chunk.length));
          received += chunk.length;
          await writer.add(chunk);
        }
        await writer.finish();
      } finally {
        // No write may still be running when the descriptor is closed and the temporary removed.
        await writer.settle();
      }
      await fsync(fd);
      finished = fs.fstatSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    // Replaces the entry itself (a link swapped in meanwhile is replaced, never written through).
    try {
      dir.rename(temporary, dir, name);
    } catch (err) {
      throw volumeFileError(err, label);
    }
    renamed = true;
    // The file as written (the server's process may already have renamed or changed it again).
    return toVolumeEntry(name, finished);
  } finally {
    if (!renamed) {
      try {
        dir.unlink(temporary);
      } catch {
        // Already gone; a listing sweeps one that could not be removed.
      }
    }
  }
}
