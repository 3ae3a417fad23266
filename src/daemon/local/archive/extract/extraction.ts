import type { ReadEntry } from 'tar';
import { fileMode } from '../modes.js';
import { entrySegments } from '../path-safety.js';
import { RestoreError, quote } from '../restore-error.js';
import { FileWrite, type Write } from './file-write.js';
import { StagingTree } from './staging-tree.js';

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

/** The time a file entry is stamped with: its own, unless it has none that is valid. */
function modificationTime(entry: ReadEntry): Date | undefined {
  return entry.mtime && !Number.isNaN(entry.mtime.getTime()) ? entry.mtime : undefined;
}

/** The failure that ends an extraction; the lowest entry index wins, so the reason does not depend on timing. */
interface Failure {
  error: unknown;
  index: number;
}

/** One extraction: the order of entries, the files in flight and the first failure. */
export class Extraction {
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
