/**
 * A bound on bytes streamed into the volume (`POST /files/write`, uploads):
 * the stream passes bytes through until `maxBytes`, then fails, so the
 * daemon's writeFile drops its half-written file and nothing is left.
 */
import { Transform, type Readable } from 'node:stream';

export class ByteLimitExceeded extends Error {
  constructor(readonly maxBytes: number) {
    super(`The request body is larger than ${maxBytes} bytes.`);
  }
}

export interface LimitedStream {
  stream: Readable;
  /** Whether the bound was passed (the stream then failed with ByteLimitExceeded). */
  exceeded(): boolean;
  /** Bytes let through so far. */
  bytes(): number;
}

/**
 * What the counter holds on each side before it pushes back. At the default
 * 16 KiB every 64 KiB socket read overfilled it, pausing and resuming the
 * request (and its socket) once per chunk; 1 MiB holds sixteen such reads
 * while the daemon's write of the previous batch runs, and stays flat.
 */
const BUFFERED_BYTES = 1024 * 1024;

/** `source` piped through a counter that fails once more than `maxBytes` arrived. */
export function limitBytes(source: Readable, maxBytes: number): LimitedStream {
  let seen = 0;
  let over = false;
  const counter = new Transform({
    highWaterMark: BUFFERED_BYTES,
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > maxBytes) {
        over = true;
        callback(new ByteLimitExceeded(maxBytes));
        return;
      }
      callback(null, chunk);
    },
  });
  source.on('error', (err) => counter.destroy(err));
  // The reader sees the failure (its pipeline, `exceeded()`); one that already stopped reading (the daemon
  // refused the write first) must not leave the 'error' unheard: that would be an uncaught exception.
  counter.on('error', () => undefined);
  source.pipe(counter);
  return { stream: counter, exceeded: () => over, bytes: () => seen };
}
