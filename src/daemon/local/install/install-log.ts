/**
 * A server's install log, `<logs>/<uuid>.install.log` (docs/reference/eggs-and-installs.md): plain text,
 * one output line each, emptied at the start of every install and bounded:
 * past `maxBytes` the lines are no longer kept (the websocket still gets
 * them) and one last line says so. The installer's own lines (the exit code,
 * why a box could not start) are prefixed `[Quetzal]`, as Wings prefixes its
 * own with `[Pterodactyl Daemon]`.
 *
 * Written by the service, not by the box: a SIGKILL of the service leaves
 * the log as far as it got (every line is appended with its own write).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { PRIVATE_FILE_MODE } from '../../../private-files.js';

/** Wings keeps install logs whole; this bounds a script that prints without end. */
export const DEFAULT_INSTALL_LOG_BYTES = 5 * 1024 * 1024;
/** One output line at most (longer ones are cut), as console lines are. */
export const MAX_LINE_CHARS = 8 * 1024;
export const LOG_PREFIX = '[Quetzal]';

export function installLogPath(logsDir: string, serverUuid: string): string {
  return path.join(logsDir, `${serverUuid}.install.log`);
}

export class InstallLogWriter {
  private written = 0;
  private full = false;
  private chain: Promise<void> = Promise.resolve();

  private constructor(
    private readonly handle: fs.FileHandle,
    private readonly maxBytes: number,
  ) {}

  /** Opens the log empty (the previous install's is gone). */
  static async create(file: string, maxBytes = DEFAULT_INSTALL_LOG_BYTES): Promise<InstallLogWriter> {
    await fs.mkdir(path.dirname(file), { recursive: true });
    const handle = await fs.open(file, 'w', PRIVATE_FILE_MODE);
    return new InstallLogWriter(handle, maxBytes);
  }

  /** Appends a line, in order; a failure to write is not the install's failure (the line is just not kept). */
  append(line: string): void {
    if (this.full) return;
    let text = `${line}\n`;
    const bytes = Buffer.byteLength(text);
    if (this.written + bytes > this.maxBytes) {
      this.full = true;
      text = `${LOG_PREFIX} the install log reached ${this.maxBytes} bytes: later lines are not kept\n`;
    }
    this.written += bytes;
    this.chain = this.chain.then(() => this.handle.appendFile(text)).catch(() => undefined);
  }

  /** The installer's own line: always kept, even past the bound (it says how the install ended). */
  appendOwn(line: string): void {
    const text = `${LOG_PREFIX} ${line}\n`;
    this.chain = this.chain.then(() => this.handle.appendFile(text)).catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.chain;
    await this.handle.close().catch(() => undefined);
  }
}

/** Splits a byte stream into lines (without `\n` or a trailing `\r`, cut at MAX_LINE_CHARS); `flush` gives a last line without newline. */
export function lineSplitter(onLine: (line: string) => void): { push(chunk: Buffer): void; flush(): void } {
  let pending = '';
  const emit = (line: string) => onLine(line.replace(/\r$/, '').slice(0, MAX_LINE_CHARS));
  return {
    push(chunk) {
      pending += chunk.toString('utf8');
      let newline: number;
      while ((newline = pending.indexOf('\n')) !== -1) {
        emit(pending.slice(0, newline));
        pending = pending.slice(newline + 1);
      }
      // A line without end is cut, not held without bound.
      if (pending.length > MAX_LINE_CHARS) {
        emit(pending);
        pending = '';
      }
    },
    flush() {
      if (pending !== '') emit(pending);
      pending = '';
    },
  };
}

/** The last `lines` lines of the log, oldest first; [] when there is none. */
export async function readInstallLogTail(file: string, lines: number): Promise<string[]> {
  if (lines <= 0) return [];
  let text: string;
  try {
    const handle = await fs.open(file, 'r');
    try {
      const { size } = await handle.stat();
      // Enough for `lines` long lines; the log is bounded anyway.
      const length = Math.min(size, lines * (MAX_LINE_CHARS + 1));
      const buffer = Buffer.alloc(length);
      await handle.read(buffer, 0, length, size - length);
      text = buffer.toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return [];
  }
  const all = text.split('\n');
  if (all.at(-1) === '') all.pop();
  return all.slice(-lines);
}
