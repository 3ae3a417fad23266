/**
 * Extracts a gzip tarball into an empty staging folder, deciding every entry
 * itself (docs/RESTORE.md). node-tar's streaming `Parser` only splits the
 * stream into entries (headers, pax and GNU long names, checksums); nothing
 * here uses its `Unpack`, whose defaults skip bad entries with a warning
 * instead of failing. Every parser warning fails the extraction.
 *
 * Entries are decided strictly in archive order, but file bodies are written
 * in the background, several files at once, while decompression runs ahead in
 * zlib's threads: one file at a time, waiting for each write, left the CPU
 * idle most of the time (docs/PERFORMANCE.md). Writes that could interfere are
 * kept in order: an entry at or below the path of a file still being written
 * waits for that write.
 */
import fs, { constants as fsConstants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { TransformOptions } from 'node:stream';
import { createGunzip, type ZlibOptions } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { RestoreError, checkSymlinkTarget, directoryMode, entrySegments, fileMode, quote } from './archive-safety.js';

/** Archive bytes per read. */
const READ_CHUNK = 256 * 1024;
/** Tar bytes per inflate call: fewer, larger calls into zlib's thread. */
const INFLATE_CHUNK = 256 * 1024;
/** Inflated bytes that may wait for the parser, so that decompression goes on while files are written. */
const INFLATE_AHEAD = 1024 * 1024;
/** Files being written at once. */
const FILES_IN_FLIGHT = 16;
/** File bytes received from the archive but not yet written: the bound on what the writes hold in memory. */
const BYTES_IN_FLIGHT = 4 * 1024 * 1024;
/**
 * Files up to this size are written whole once their body has arrived: created
 * in the thread pool, several at once (a create can cost half a millisecond of
 * kernel time on a disk, and creates in different threads overlap), then
 * written, moded, timed and closed with synchronous calls. Five round trips
 * between threads per file cost more than writing a small file does (the
 * service already reads and writes its SQLite file, in the same DATA_DIR,
 * synchronously).
 */
const SMALL_FILE = 64 * 1024;

// zlib streams pass stream options on to their Transform; ZlibOptions does not list them.
const inflateOptions: ZlibOptions & Pick<TransformOptions, 'readableHighWaterMark'> = {
  chunkSize: INFLATE_CHUNK,
  readableHighWaterMark: INFLATE_AHEAD,
};

const NEW_FILE_FLAGS = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Any failure as a RestoreError with a one-line reason (refusals already are one). */
export function asRestoreError(err: unknown, context: string): RestoreError {
  if (err instanceof RestoreError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new RestoreError(`${context}: ${oneLine(message)}`, { cause: err });
}

function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

// The callback forms of fs: a file write takes five calls, and the promise API's FileHandle costs more per call.
function fsCall<T>(start: (done: (err: NodeJS.ErrnoException | null, value: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => start((err, value) => (err ? reject(err) : resolve(value))));
}
const openFile = (target: string, flags: number, mode: number) => fsCall<number>((cb) => fs.open(target, flags, mode, cb));
const closeFile = (fd: number) => fsCall<void>((cb) => fs.close(fd, (err) => cb(err ?? null, undefined)));
const fchmod = (fd: number, mode: number) => fsCall<void>((cb) => fs.fchmod(fd, mode, (err) => cb(err ?? null, undefined)));
const futimes = (fd: number, time: Date) => fsCall<void>((cb) => fs.futimes(fd, time, time, (err) => cb(err ?? null, undefined)));
const writev = (fd: number, buffers: Buffer[]) =>
  fsCall<number>((cb) => fs.writev(fd, buffers, (err, written) => cb(err, written)));

function lstatOrNull(target: string): fs.Stats | null {
  return fs.lstatSync(target, { throwIfNoEntry: false }) ?? null;
}

/** The time a file entry is stamped with: its own, unless it has none that is valid. */
function modificationTime(entry: ReadEntry): Date | undefined {
  return entry.mtime && !Number.isNaN(entry.mtime.getTime()) ? entry.mtime : undefined;
}

/** Writes every byte of `buffers` at the file's current offset. */
async function writeAll(fd: number, buffers: Buffer[]): Promise<void> {
  let total = 0;
  for (const buffer of buffers) total += buffer.length;
  let written = await writev(fd, buffers);
  while (written < total) {
    // A short write (rare for regular files): carry on from where it stopped.
    const rest: Buffer[] = [];
    let skip = written;
    for (const buffer of buffers) {
      if (skip >= buffer.length) skip -= buffer.length;
      else {
        rest.push(skip > 0 ? buffer.subarray(skip) : buffer);
        skip = 0;
      }
    }
    buffers = rest;
    total -= written;
    written = await writev(fd, buffers);
  }
}

/** A file being written in the background. */
interface Write {
  readonly done: Promise<void>;
}

/** The failure that ends an extraction; the lowest entry index wins, so the reason does not depend on timing. */
interface Failure {
  error: unknown;
  index: number;
}

/** One regular file being written in the background: its bytes arrive with `push`, in order. */
class FileWrite {
  readonly done: Promise<void>;
  private readonly chunks: Buffer[] = [];
  private ended = false;
  private written = 0;
  private wake: (() => void) | null = null;

  constructor(
    private readonly extraction: Extraction,
    private readonly index: number,
    private readonly entryPath: string,
    private readonly absolute: string,
    private readonly size: number,
    private readonly mode: number,
    private readonly mtime: Date | undefined,
  ) {
    this.done = this.run().catch((err: unknown) => this.extraction.fail(err, this.index));
  }

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.signal();
  }

  end(): void {
    this.ended = true;
    this.signal();
  }

  private signal(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  private async run(): Promise<void> {
    // Opened even after another entry failed: a refusal here must still be seen, for the lowest index to win.
    const fd = this.extraction.staging.createFile(this.entryPath, this.absolute);
    try {
      for (;;) {
        if (this.extraction.failed) return;
        if (this.chunks.length > 0) {
          const batch = this.chunks.splice(0);
          let bytes = 0;
          for (const chunk of batch) bytes += chunk.length;
          try {
            await writeAll(fd, batch);
          } finally {
            this.extraction.release(bytes);
          }
          this.written += bytes;
          continue;
        }
        if (this.ended) break;
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
      if (this.written !== this.size) throw new RestoreError(`archive entry ${quote(this.entryPath)} is truncated`);
      await fchmod(fd, this.mode);
      if (this.mtime) await futimes(fd, this.mtime);
    } finally {
      // Whatever was not written is no longer held for.
      let unwritten = 0;
      for (const chunk of this.chunks.splice(0)) unwritten += chunk.length;
      this.extraction.release(unwritten);
      await closeFile(fd);
    }
  }
}

/**
 * The folder entries are extracted into. Only this code writes there, so the
 * directories it has created or checked are remembered instead of being
 * checked again for every entry below them (memory grows with the number of
 * directories, not with the archive's bytes).
 *
 * Its calls are synchronous: each is one system call of a few microseconds,
 * and entries are decided one after another, so a round trip through the
 * thread pool per call only added waiting (a 5,600-entry tree of small files
 * and folders: 1.1 s with awaited calls, 0.5-0.7 s with these;
 * docs/PERFORMANCE.md). Only the bodies of large files are written in the
 * background.
 */
class StagingTree {
  private readonly knownDirectories = new Set<string>();

  constructor(private readonly root: string) {}

  /**
   * Makes the entry's parent directories, creating missing ones (entries may
   * come before their folder's own entry). A parent that is a symlink is
   * refused outright, even one the archive made pointing inside itself: then
   * nothing is ever written through a link, and no reasoning about where a
   * link leads is needed.
   */
  prepareParents(entryPath: string, segments: string[]): string {
    let relative = '';
    for (let i = 0; i < segments.length - 1; i++) {
      relative = relative === '' ? segments[i]! : `${relative}/${segments[i]}`;
      if (this.knownDirectories.has(relative)) continue;
      const absolute = path.join(this.root, relative);
      const stat = lstatOrNull(absolute);
      if (stat === null) {
        fs.mkdirSync(absolute);
        fs.chmodSync(absolute, directoryMode(undefined));
      } else if (stat.isSymbolicLink()) {
        throw new RestoreError(`archive entry ${quote(entryPath)} goes through the symlink ${quote(relative)}`);
      } else if (!stat.isDirectory()) {
        throw new RestoreError(`archive entry ${quote(entryPath)} needs ${quote(relative)} to be a directory, but it is a file`);
      }
      this.knownDirectories.add(relative);
    }
    return path.join(this.root, ...segments);
  }

  /** A later file or symlink entry replaces an earlier one at the same path, as with tar; it never replaces a directory. */
  private clearForNonDirectory(entryPath: string, absolute: string): void {
    const existing = lstatOrNull(absolute);
    if (existing === null) return;
    if (existing.isDirectory()) {
      throw new RestoreError(`archive entry ${quote(entryPath)} would replace a directory of the same archive`);
    }
    fs.unlinkSync(absolute);
  }

  /** A new file for a file entry (mode 0600 until it is complete). O_EXCL + O_NOFOLLOW: never something reached through a link. */
  createFile(entryPath: string, absolute: string): number {
    try {
      return fs.openSync(absolute, NEW_FILE_FLAGS, 0o600);
    } catch (err) {
      // Something is there already (an earlier entry of the same path): what tar would do is decided on lstat.
      if (errorCode(err) !== 'EEXIST') throw err;
    }
    this.clearForNonDirectory(entryPath, absolute);
    return fs.openSync(absolute, NEW_FILE_FLAGS, 0o600);
  }

  /**
   * A small file written whole: created as createFile does, but in the thread
   * pool (a create is the costly call, on some disks half a millisecond of
   * kernel time, and several can run at once), then written, moded and timed
   * before it is closed.
   */
  async writeSmallFile(entryPath: string, absolute: string, body: Buffer[], mode: number, mtime: Date | undefined): Promise<number> {
    let fd: number;
    try {
      fd = await openFile(absolute, NEW_FILE_FLAGS, 0o600);
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw err;
      fd = this.createFile(entryPath, absolute);
    }
    try {
      let written = 0;
      for (const chunk of body) {
        for (let offset = 0; offset < chunk.length; ) offset += fs.writeSync(fd, chunk, offset);
        written += chunk.length;
      }
      fs.fchmodSync(fd, mode);
      if (mtime) fs.futimesSync(fd, mtime, mtime);
      return written;
    } finally {
      fs.closeSync(fd);
    }
  }

  makeDirectory(entry: ReadEntry, segments: string[]): void {
    const absolute = this.prepareParents(entry.path, segments);
    try {
      fs.mkdirSync(absolute);
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw err;
      const existing = fs.lstatSync(absolute);
      if (!existing.isDirectory()) {
        throw new RestoreError(`archive entry ${quote(entry.path)} is a directory where the same archive put a file or symlink`);
      }
    }
    // Owner rwx always: see directoryMode. A real directory made here, so chmod follows nothing.
    fs.chmodSync(absolute, directoryMode(entry.mode));
    this.knownDirectories.add(segments.join('/'));
  }

  makeSymlink(entry: ReadEntry, segments: string[]): void {
    const target = entry.linkpath ?? '';
    checkSymlinkTarget(entry.path, target);
    const absolute = this.prepareParents(entry.path, segments);
    this.clearForNonDirectory(entry.path, absolute);
    fs.symlinkSync(target, absolute);
  }
}

/** One extraction: the order of entries, the files in flight and the first failure. */
class Extraction {
  readonly staging: StagingTree;
  private failure: Failure | null = null;
  /** Waits to end when the extraction fails (see untilFailed). */
  private readonly failureListeners = new Set<() => void>();
  /** Files being written, by entry path (segments joined with '/'). */
  private readonly inFlight = new Map<string, Write>();
  private bytesInFlight = 0;
  private bytesWaiters: Array<() => void> = [];

  constructor(
    stagingRoot: string,
    private readonly onFirstFailure: () => void,
  ) {
    this.staging = new StagingTree(stagingRoot);
  }

  get failed(): boolean {
    return this.failure !== null;
  }

  /** Records a failure; the first one stops the extraction. Of several, the lowest entry index is reported. */
  fail(error: unknown, index: number): void {
    if (this.failure !== null) {
      if (index < this.failure.index) this.failure = { error, index };
      return;
    }
    this.failure = { error, index };
    this.onFirstFailure();
    for (const listener of [...this.failureListeners]) listener();
  }

  /**
   * Waits for what `start` sets going, or for a failure, whichever comes
   * first. The failure listener is removed afterwards: one left on a promise
   * that never settles would keep every waiter (and its entry) alive.
   */
  untilFailed(start: (done: () => void) => void): Promise<void> {
    if (this.failed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        this.failureListeners.delete(done);
        resolve();
      };
      this.failureListeners.add(done);
      start(done);
    });
  }

  get reason(): unknown {
    return this.failure?.error;
  }

  release(bytes: number): void {
    this.bytesInFlight -= bytes;
    if (this.bytesInFlight < BYTES_IN_FLIGHT && this.bytesWaiters.length > 0) {
      const waiters = this.bytesWaiters;
      this.bytesWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  private async roomForBytes(): Promise<void> {
    while (this.bytesInFlight >= BYTES_IN_FLIGHT && !this.failed) {
      await this.untilFailed((done) => this.bytesWaiters.push(done));
    }
  }

  /** Waits for the writes of files at `relative` or at any of its parents: later entries there must see them done. */
  private async settleConflicts(relative: string): Promise<void> {
    for (let conflict = this.writeAtOrAbove(relative); conflict; conflict = this.writeAtOrAbove(relative)) await conflict.done;
  }

  /** A file write in flight at `relative` or at one of its parents. */
  private writeAtOrAbove(relative: string): Write | undefined {
    if (this.inFlight.size === 0) return undefined;
    for (const [busy, write] of this.inFlight) {
      if (relative === busy || relative.startsWith(`${busy}/`)) return write;
    }
    return undefined;
  }

  /**
   * Decides an entry at once, in the parser's own call, when nothing makes it
   * wait (the caller knows no earlier entry is still being decided): a folder,
   * or a small file, with no write in flight at or above its path. The small
   * file is written when its body has arrived, which is before the parser
   * hands over the next entry. False when the entry must go the long way
   * (place). Most entries of a real volume go this way: it skips a dozen
   * promises per entry.
   */
  placeNow(entry: ReadEntry, index: number): boolean {
    const isFile = entry.type === 'File' || entry.type === 'OldFile' || entry.type === 'ContiguousFile';
    if (!(isFile && entry.size <= SMALL_FILE) && entry.type !== 'Directory') return false;
    try {
      const segments = entrySegments(entry.path);
      if (segments.length === 0 || this.writeAtOrAbove(segments.join('/'))) return false;
      if (!isFile) {
        this.staging.makeDirectory(entry, segments);
        entry.resume();
        return true;
      }
      this.takeSmallFile(entry, segments.join('/'), this.staging.prepareParents(entry.path, segments), index);
    } catch (err) {
      this.fail(err, index);
    }
    return true;
  }

  async roomForFile(): Promise<void> {
    while (this.inFlight.size >= FILES_IN_FLIGHT && !this.failed) {
      await this.untilFailed((done) => {
        for (const write of this.inFlight.values()) void write.done.then(done);
      });
    }
  }

  /** Resolves once every file write has ended, written or not. */
  async writesSettled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight.values()].map((write) => write.done));
  }

  /** Decides one entry; a file's body is handed to a background write once it has been read from the archive. */
  async place(entry: ReadEntry, index: number): Promise<void> {
    const segments = entrySegments(entry.path);
    if (segments.length === 0) {
      // `./` itself: the volume root exists already and keeps its own mode.
      if (entry.type === 'Directory') return void entry.resume();
      throw new RestoreError(`archive entry ${quote(entry.path)} would replace the volume itself`);
    }
    switch (entry.type) {
      case 'File':
      case 'OldFile':
      case 'ContiguousFile':
        return this.writeFile(entry, segments, index);
      case 'Directory':
        await this.settleConflicts(segments.join('/'));
        this.staging.makeDirectory(entry, segments);
        return void entry.resume();
      case 'SymbolicLink':
        await this.settleConflicts(segments.join('/'));
        this.staging.makeSymlink(entry, segments);
        return void entry.resume();
      case 'Link':
        throw new RestoreError(`archive entry ${quote(entry.path)} is a hard link`);
      case 'CharacterDevice':
      case 'BlockDevice':
        throw new RestoreError(`archive entry ${quote(entry.path)} is a device file`);
      case 'FIFO':
        throw new RestoreError(`archive entry ${quote(entry.path)} is a FIFO`);
      case 'GNUDumpDir':
      case 'SparseFile':
      case 'ContinuationFile':
      case 'TapeVolumeHeader':
      case 'SolarisACL':
      case 'Inode':
      case 'Unsupported':
      // Meta headers are applied by the parser to the entry that follows; one arriving here is refused all the same.
      case 'ExtendedHeader':
      case 'GlobalExtendedHeader':
      case 'OldExtendedHeader':
      case 'NextFileHasLongPath':
      case 'NextFileHasLongLinkpath':
      case 'OldGnuLongPath':
        throw new RestoreError(`archive entry ${quote(entry.path)} has the unsupported type ${entry.type}`);
    }
  }

  private async writeFile(entry: ReadEntry, segments: string[], index: number): Promise<void> {
    const relative = segments.join('/');
    await this.settleConflicts(relative);
    const absolute = this.staging.prepareParents(entry.path, segments);
    if (entry.size <= SMALL_FILE) return this.takeSmallFile(entry, relative, absolute, index);
    await this.roomForFile();
    if (this.failed) return;
    const write = new FileWrite(this, index, entry.path, absolute, entry.size, fileMode(entry.mode), modificationTime(entry));
    this.inFlight.set(relative, write);
    void write.done.then(() => {
      if (this.inFlight.get(relative) === write) this.inFlight.delete(relative);
    });
    // The body is taken as the parser delivers it; past the byte bound the entry pauses, and with it the parser.
    await this.untilFailed((done) => {
      let paused = false;
      entry.once('end', done);
      entry.on('data', (chunk: Buffer) => {
        this.bytesInFlight += chunk.length;
        write.push(chunk);
        if (this.bytesInFlight >= BYTES_IN_FLIGHT && !paused) {
          paused = true;
          entry.pause();
          void this.roomForBytes().then(() => {
            paused = false;
            if (!this.failed) entry.resume();
          });
        }
      });
    });
    write.end();
  }

  /**
   * Collects a small file's body and, once it has all arrived, writes the file
   * in the background. Nothing to wait for here: the parser hands over the
   * next entry only after this one's end, when the write is under way.
   */
  private takeSmallFile(entry: ReadEntry, relative: string, absolute: string, index: number): void {
    const body: Buffer[] = [];
    entry.on('data', (chunk: Buffer) => body.push(chunk));
    entry.once('end', () => {
      if (!this.failed) this.startSmallFile(entry, relative, absolute, body, index);
    });
  }

  private startSmallFile(entry: ReadEntry, relative: string, absolute: string, body: Buffer[], index: number): void {
    const done = this.staging
      .writeSmallFile(entry.path, absolute, body, fileMode(entry.mode), modificationTime(entry))
      .then((written) => {
        if (written !== entry.size) throw new RestoreError(`archive entry ${quote(entry.path)} is truncated`);
      })
      .catch((err: unknown) => this.fail(err, index));
    const write: Write = { done };
    this.inFlight.set(relative, write);
    void done.then(() => {
      if (this.inFlight.get(relative) === write) this.inFlight.delete(relative);
    });
  }
}

/**
 * Extracts the gzip tarball open in `archive` into `stagingRoot` (an empty
 * directory). Resolves only when every entry was extracted and the archive
 * ended cleanly (gzip trailer checked, tar end-of-archive marker seen); throws
 * a RestoreError otherwise, leaving whatever was staged for the caller to
 * remove — but only once no write into it is still going on.
 */
export async function extractArchive(archive: FileHandle, stagingRoot: string): Promise<void> {
  // gzip is undone below, with node's zlib; the parser sees plain tar only.
  const parser = new Parser({ strict: false, brotli: false, zstd: false });
  const extraction = new Extraction(stagingRoot, () => {
    // A fresh error: the parser decorates what it is given, and the failure is reported as it is.
    parser.abort(new Error('extraction stopped'));
  });

  let sawEndOfArchive = false;
  let entries = 0;
  let handling: Promise<void> = Promise.resolve();
  const parserEnded = new Promise<void>((resolve) => parser.once('end', () => resolve()));

  parser.on('eof', () => {
    sawEndOfArchive = true;
  });
  // The parser hands over the next entry once this one has ended, i.e. once
  // its body was taken or it was resumed here; the chain keeps the decisions
  // strictly in archive order, while file bodies are written in the background.
  let waiting = 0;
  parser.on('entry', (entry: ReadEntry) => {
    const index = entries;
    entries += 1;
    entry.on('error', (err: unknown) => extraction.fail(err, index));
    if (waiting === 0 && !extraction.failed && extraction.placeNow(entry, index)) return;
    waiting += 1;
    handling = handling
      .then(async () => {
        if (extraction.failed) return;
        await extraction.place(entry, index);
      })
      .catch((err: unknown) => extraction.fail(err, index))
      .then(() => {
        waiting -= 1;
      });
  });
  // Entries the parser will not hand over: unknown types (sparse files, volume labels...) and oversized meta headers.
  parser.on('ignoredEntry', (entry: ReadEntry) => {
    const index = entries;
    entries += 1;
    extraction.fail(new RestoreError(`archive entry ${quote(entry.path)} has the unsupported type ${entry.type}`), index);
  });
  parser.on('warn', (code: string, message: string) => {
    // The one warning that is no defect: a well-formed archive with no entries at all (an empty volume's backup).
    if (code === 'TAR_BAD_ARCHIVE' && sawEndOfArchive && entries === 0) return;
    extraction.fail(new RestoreError(`the archive is corrupt: ${oneLine(message)}`), entries);
  });
  parser.on('error', (err: Error) => extraction.fail(asRestoreError(err, 'the archive is corrupt'), entries));

  const drained = () => extraction.untilFailed((done) => parser.once('drain', done));
  try {
    await pipeline(
      archive.createReadStream({ start: 0, autoClose: false, highWaterMark: READ_CHUNK }),
      createGunzip(inflateOptions),
      async (tar: AsyncIterable<Buffer>) => {
        for await (const chunk of tar) {
          if (extraction.failed) throw extraction.reason;
          // What follows the end-of-archive marker is ignored (as tar does), but still read, so gzip's CRC is checked.
          if (sawEndOfArchive) continue;
          // Small files are written in the background as the parser delivers them: at most so many at once.
          await extraction.roomForFile();
          if (!parser.write(chunk)) await drained();
        }
        if (extraction.failed) throw extraction.reason;
        parser.end();
        await extraction.untilFailed((done) => void parserEnded.then(done));
      },
    );
  } catch (err) {
    extraction.fail(asRestoreError(err, 'the archive is corrupt'), entries);
  }
  // Let the entry being decided finish, or notice the failure, and every write end, before the caller removes the staging folder.
  for (let settled = handling; ; settled = handling) {
    await settled;
    if (settled === handling) break;
  }
  await extraction.writesSettled();
  if (extraction.failed) throw asRestoreError(extraction.reason, 'the archive could not be extracted');
  if (!sawEndOfArchive) throw new RestoreError('the archive is truncated: it ends before its end-of-archive marker');
}
