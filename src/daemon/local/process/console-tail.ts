/**
 * Live console output (docs/reference/power-and-console.md#websocket's `console output` and `send logs`), read from
 * a server's console log `<logDir>/<uuid>.log`: for a confined server, written
 * by its monitor in Kubernetes' format and renewed (a new file renamed over
 * it) at its cap (container/conmon.ts); for an unconfined one, written by the
 * process itself and rotated by copy and truncate (console-log.ts). Records
 * are turned into the server's own lines (console-record.ts).
 *
 * Bounded work per server (docs/reference/power-and-console.md#servers-outlive-the-service): the log is read in 64 KiB chunks, each
 * its own turn of the event loop; a reader more than MAX_LAG_BYTES (64 MiB) behind (a
 * server printing faster than it can be read) skips to near the end, so that
 * what watchers see stays current; memory per reader is a chunk and one line.
 * A renewed log is noticed as another inode at the path: the reader finishes
 * the file it has open (held by its descriptor) before it goes on with the
 * new one, so nothing is lost to live watchers.
 *
 * One reader per server however many sockets watch it (ref-counted): it
 * starts at the log's end when the first watcher comes, reads what is
 * appended, splits it into lines (each cut at CONSOLE_LINE_MAX_CHARS) and
 * hands every line to every watcher; the last watcher gone, it stops. Changes
 * are noticed through one directory watch (inotify) for all servers, with a
 * poll every second in case an event is missed (every 250 ms where the file
 * system gives none). A truncation (a rotation) is noticed as the file being
 * shorter than where the reader was: the rest of what it had not read yet is
 * in `<uuid>.log.1` from that offset, and is read from there first. A
 * rotation that the reader only notices once the process has written more
 * than it had read before (two calls of the 1 s size check apart, at 50 MiB
 * logs) loses that much output to live watchers; the files keep it.
 */
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { PRIVATE_DIR_MODE } from '../../../private-files.js';
import { joinConsoleRecords, parseConsoleRecord } from './console-record.js';
import { errnoCode } from './helpers.js';
import { assertSafeUuid } from './supervisor-options.js';

/** Longer lines are cut here (the rest of the line is dropped): a frame stays small whatever a server prints. */
export const CONSOLE_LINE_MAX_CHARS = 8 * 1024;
/** A record's prefix (time, stream, tag) on top of its text. */
const RECORD_PREFIX_MAX_CHARS = 64;
const READ_CHUNK = 64 * 1024;
/**
 * Further behind than this, a reader skips ahead: live watchers see what is current (a second or two
 * behind at most, at this machine's reading speed), the log keeps the rest. Above a burst's size (a
 * 30 MB flood is read whole, backpressure.test.ts), and above the log's own cap by default.
 */
const MAX_LAG_BYTES = 64 * 1024 * 1024;
const POLL_MS = 1_000;
const POLL_WITHOUT_WATCH_MS = 250;
/** What `send logs` reads from each file at most: 150 lines at the cap, and some. */
const HISTORY_MAX_BYTES = 2 * 1024 * 1024;

type LineListener = (line: string) => void;

export class ConsoleTails {
  private readonly tails = new Map<string, ConsoleTail>();
  private directoryWatch: fsSync.FSWatcher | null = null;
  private pollTimer: NodeJS.Timeout | null = null;

  /** `onError`: a read that failed (retried at the next change or poll). */
  constructor(
    private readonly logDir: string,
    private readonly onError: (err: unknown, serverUuid: string) => void = () => {},
  ) {}

  watch(serverUuid: string, onLine: LineListener): () => void {
    assertSafeUuid(serverUuid);
    let tail = this.tails.get(serverUuid);
    if (!tail) {
      tail = new ConsoleTail(this.logPath(serverUuid), (err) => this.onError(err, serverUuid));
      this.tails.set(serverUuid, tail);
      this.startWatching();
    }
    const owner = tail;
    const remove = owner.add(onLine);
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      remove();
      if (!owner.idle) return;
      owner.close();
      if (this.tails.get(serverUuid) === owner) this.tails.delete(serverUuid);
      if (this.tails.size === 0) this.stopWatching();
    };
  }

  /** Up to the last `count` complete lines, oldest first: from `<uuid>.log`, and from `<uuid>.log.1` when that has too few. */
  async history(serverUuid: string, count: number): Promise<string[]> {
    assertSafeUuid(serverUuid);
    if (count <= 0) return [];
    const file = this.logPath(serverUuid);
    // A line may take several records (`P`): ask for more raw lines than lines wanted.
    const rawCount = count * 2 + 2;
    const recent = joinConsoleRecords(await lastLines(file, rawCount), CONSOLE_LINE_MAX_CHARS);
    if (recent.length >= count) return recent.slice(-count);
    const older = joinConsoleRecords(await lastLines(`${file}.1`, rawCount), CONSOLE_LINE_MAX_CHARS);
    return [...older, ...recent].slice(-count);
  }

  /** How many servers are being followed (for tests). */
  get following(): number {
    return this.tails.size;
  }

  private logPath(serverUuid: string): string {
    return path.join(this.logDir, `${serverUuid}.log`);
  }

  private startWatching(): void {
    if (this.pollTimer) return;
    try {
      fsSync.mkdirSync(this.logDir, { recursive: true, mode: PRIVATE_DIR_MODE });
      const watch = fsSync.watch(this.logDir, { persistent: false }, (_event, filename) => this.changed(filename));
      watch.on('error', (err) => {
        // The folder went away, or inotify gave up: the poll carries on, faster.
        this.onError(err, '*');
        watch.close();
        if (this.directoryWatch === watch) this.directoryWatch = null;
        this.schedulePoll(POLL_WITHOUT_WATCH_MS);
      });
      this.directoryWatch = watch;
    } catch (err) {
      // No inotify watch left (ENOSPC), or no such folder: polling alone.
      this.onError(err, '*');
      this.directoryWatch = null;
    }
    this.schedulePoll(this.directoryWatch ? POLL_MS : POLL_WITHOUT_WATCH_MS);
  }

  private schedulePoll(intervalMs: number): void {
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = setInterval(() => {
      for (const tail of this.tails.values()) tail.poke();
    }, intervalMs);
    this.pollTimer.unref();
  }

  private stopWatching(): void {
    this.directoryWatch?.close();
    this.directoryWatch = null;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
  }

  private changed(filename: string | Buffer | null): void {
    if (filename === null) {
      for (const tail of this.tails.values()) tail.poke();
      return;
    }
    const match = /^(.+)\.log(?:\.1)?$/.exec(filename.toString());
    if (match) this.tails.get(match[1]!)?.poke();
  }
}

/** One server's reader: the log file it has open, where it is in it, the line it is in the middle of, and who hears the lines. */
class ConsoleTail {
  private readonly listeners = new Set<{ onLine: LineListener }>();
  /** The log file being read, held open: a renewed log's old file is read to its end through it. */
  private handle: fs.FileHandle | null = null;
  private inode = 0;
  /** Bytes of the open file already read. */
  private position: number;
  private busy = false;
  private again = false;
  private closed = false;
  private readonly decoder = new StringDecoder('utf8');
  /** The raw log line in progress (a record, or a plain line). */
  private pending = '';
  /** The raw line in progress passed the cap: the rest of it is dropped. */
  private cutting = false;
  /** The server's line being put together from `P` records. */
  private joined = '';

  constructor(
    private readonly file: string,
    private readonly onError: (err: unknown) => void,
  ) {
    // From now on: what was printed before is `send logs`' business.
    const stat = statOrNull(file);
    this.position = stat?.size ?? 0;
    this.inode = stat?.ino ?? 0;
  }

  add(onLine: LineListener): () => void {
    const entry = { onLine };
    this.listeners.add(entry);
    return () => this.listeners.delete(entry);
  }

  get idle(): boolean {
    return this.listeners.size === 0;
  }

  close(): void {
    this.closed = true;
    if (!this.busy) this.release();
  }

  /** Something may have been appended: read it (once more after the read in progress, if one is). */
  poke(): void {
    if (this.closed) return;
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = true;
    void this.drainWhileChanged();
  }

  private release(): void {
    const handle = this.handle;
    this.handle = null;
    void handle?.close().catch(() => undefined);
  }

  private async drainWhileChanged(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.drain();
      } while (this.again && !this.closed);
    } catch (err) {
      this.release();
      this.onError(err);
    } finally {
      this.busy = false;
      if (this.closed) this.release();
    }
  }

  private async drain(): Promise<void> {
    for (let renewals = 0; renewals < 4 && !this.closed; renewals++) {
      if (!this.handle && !(await this.openCurrent())) return;
      await this.readToEnd(this.handle!);
      const current = statOrNull(this.file);
      if (current === null) return; // gone: whatever appears is read from its start
      if (current.ino === this.inode) {
        if (current.size >= this.position) return;
        // Truncated in place (an unconfined server's log, rotated by copy and truncate).
        await this.readRotatedRest(this.position);
        this.position = 0;
        continue;
      }
      // Renewed (conmon's cap, or a start set the old log aside): the old file is read; on to the new one.
      this.release();
      this.position = 0;
    }
  }

  /** Opens the log at the path; false when there is none (yet). */
  private async openCurrent(): Promise<boolean> {
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(this.file, 'r');
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') {
        this.position = 0;
        this.inode = 0;
        return false;
      }
      throw err;
    }
    const { ino } = await handle.stat();
    // Another file than the one we knew (or none before): read it from its start.
    if (ino !== this.inode) this.position = 0;
    this.inode = ino;
    this.handle = handle;
    return true;
  }

  /** Reads what the open file holds past `position`, a chunk per turn of the event loop. */
  private async readToEnd(handle: fs.FileHandle): Promise<void> {
    let size = (await handle.stat()).size;
    const buffer = Buffer.allocUnsafe(READ_CHUNK);
    while (this.position < size && !this.closed) {
      if (size - this.position > MAX_LAG_BYTES) this.skipTo(size - READ_CHUNK);
      const { bytesRead } = await handle.read(buffer, 0, Math.min(READ_CHUNK, size - this.position), this.position);
      if (bytesRead === 0) break;
      this.position += bytesRead;
      this.consume(buffer.subarray(0, bytesRead));
      // Caught up with what the size said: a busy server has written more meanwhile.
      if (this.position >= size) size = (await handle.stat()).size;
    }
  }

  /** Jumps ahead; what is read next starts in the middle of a line, which is dropped up to its end. */
  private skipTo(position: number): void {
    this.position = position;
    this.decoder.end();
    this.pending = '';
    this.joined = '';
    this.cutting = true;
  }

  /** After a rotation by copy: `<uuid>.log.1` is the old log whole, so what we had not read yet starts at `from` there. */
  private async readRotatedRest(from: number): Promise<void> {
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(`${this.file}.1`, 'r');
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return;
      throw err;
    }
    try {
      const size = (await handle.stat()).size;
      // Shorter than where we were: not the copy of what we were reading (truncated by someone else).
      if (size <= from) return;
      const buffer = Buffer.allocUnsafe(READ_CHUNK);
      for (let position = from; position < size && !this.closed;) {
        const { bytesRead } = await handle.read(buffer, 0, Math.min(READ_CHUNK, size - position), position);
        if (bytesRead === 0) break;
        position += bytesRead;
        this.consume(buffer.subarray(0, bytesRead));
      }
    } finally {
      await handle.close();
    }
  }

  private consume(chunk: Buffer): void {
    const text = this.decoder.write(chunk);
    let start = 0;
    for (;;) {
      const newline = text.indexOf('\n', start);
      this.append(newline === -1 ? text.slice(start) : text.slice(start, newline));
      if (newline === -1) return;
      this.endRawLine();
      start = newline + 1;
    }
  }

  private append(piece: string): void {
    if (this.cutting || piece.length === 0) return;
    const room = CONSOLE_LINE_MAX_CHARS + RECORD_PREFIX_MAX_CHARS - this.pending.length;
    if (piece.length > room) {
      this.pending += piece.slice(0, room);
      this.cutting = true;
      return;
    }
    this.pending += piece;
  }

  private endRawLine(): void {
    const skipped = this.cutting && this.pending.length === 0;
    const raw = this.pending.endsWith('\r') ? this.pending.slice(0, -1) : this.pending;
    this.pending = '';
    this.cutting = false;
    if (skipped) return; // the tail of a line we jumped into
    const record = parseConsoleRecord(raw);
    if (this.joined.length < CONSOLE_LINE_MAX_CHARS)
      this.joined += record.text.slice(0, CONSOLE_LINE_MAX_CHARS - this.joined.length);
    if (!record.ends) return;
    const line = this.joined.endsWith('\r') ? this.joined.slice(0, -1) : this.joined;
    this.joined = '';
    for (const listener of this.listeners) {
      try {
        listener.onLine(line);
      } catch (err) {
        this.onError(err);
      }
    }
  }
}

function statOrNull(file: string): fsSync.Stats | null {
  try {
    return fsSync.statSync(file);
  } catch {
    return null;
  }
}

/** The last `count` complete lines of `file` (a last line without its newline is still being written: left out). */
async function lastLines(file: string, count: number): Promise<string[]> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, 'r');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return [];
    throw err;
  }
  try {
    let end = (await handle.stat()).size;
    const chunks: Buffer[] = [];
    let newlines = 0;
    let total = 0;
    // count lines need count newlines, and one more before them to know where the first begins.
    while (end > 0 && newlines <= count && total < HISTORY_MAX_BYTES) {
      const length = Math.min(READ_CHUNK, end, HISTORY_MAX_BYTES - total);
      const chunk = Buffer.allocUnsafe(length);
      const { bytesRead } = await handle.read(chunk, 0, length, end - length);
      if (bytesRead < length) break;
      chunks.unshift(chunk);
      end -= length;
      total += length;
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) newlines += 1;
    }
    const pieces = Buffer.concat(chunks).toString('utf8').split('\n');
    // The piece after the last newline is a line still being written (or nothing).
    pieces.pop();
    // Not read from the start of the file: the first piece is the tail of a line.
    if (end > 0) pieces.shift();
    return pieces.slice(-count).map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line).slice(0, CONSOLE_LINE_MAX_CHARS));
  } finally {
    await handle.close();
  }
}
