import { RestoreError, quote } from '../restore-error.js';
import { closeFile, fchmod, futimes, writev } from './fs-callbacks.js';
import type { StagingTree } from './staging-tree.js';

/** A file being written in the background. */
export interface Write {
  readonly done: Promise<void>;
}

/** What a file write needs of the extraction it belongs to. */
export interface WriteContext {
  readonly staging: StagingTree;
  readonly failed: boolean;
  fail(error: unknown, index: number): void;
  release(bytes: number): void;
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

/** One regular file being written in the background: its bytes arrive with `push`, in order. */
export class FileWrite {
  readonly done: Promise<void>;
  private readonly chunks: Buffer[] = [];
  private ended = false;
  private written = 0;
  private wake: (() => void) | null = null;

  constructor(
    private readonly extraction: WriteContext,
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
