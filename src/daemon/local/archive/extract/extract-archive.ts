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
import type { FileHandle } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { PassThrough, type TransformOptions } from 'node:stream';
import { createGunzip, type ZlibOptions } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { RestoreError, asRestoreError, oneLine, quote } from '../restore-error.js';
import { ExtractionBounds, type ExtractLimits } from './bounds.js';
import { Extraction } from './extraction.js';

export type { ExtractLimits } from './bounds.js';

/** Archive bytes per read. */
const READ_CHUNK = 256 * 1024;
/** Tar bytes per inflate call: fewer, larger calls into zlib's thread. */
const INFLATE_CHUNK = 256 * 1024;
/** Inflated bytes that may wait for the parser, so that decompression goes on while files are written. */
const INFLATE_AHEAD = 1024 * 1024;

// zlib streams pass stream options on to their Transform; ZlibOptions does not list them.
const inflateOptions: ZlibOptions & Pick<TransformOptions, 'readableHighWaterMark'> = {
  chunkSize: INFLATE_CHUNK,
  readableHighWaterMark: INFLATE_AHEAD,
};

/**
 * Extracts the gzip tarball open in `archive` into `stagingRoot` (an empty
 * directory). Resolves only when every entry was extracted and the archive
 * ended cleanly (gzip trailer checked, tar end-of-archive marker seen); throws
 * a RestoreError otherwise, leaving whatever was staged for the caller to
 * remove — but only once no write into it is still going on.
 *
 * `limits`: the bounds on entries and expanded bytes (bounds.ts); the free
 * space of `stagingRoot`'s file system, less a margin, is always one. An
 * entry past a bound fails the extraction before anything is written for it.
 */
export async function extractArchive(
  archive: FileHandle,
  stagingRoot: string,
  limits: ExtractLimits = {},
  /** `tar`: a plain tarball (the file manager's `.tar`); a backup is always gzip. */
  format: 'tar.gz' | 'tar' = 'tar.gz',
): Promise<void> {
  let bounds: ExtractionBounds;
  try {
    bounds = new ExtractionBounds(stagingRoot, limits);
  } catch (err) {
    throw asRestoreError(err, 'the free space of the staging folder could not be read');
  }
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
    try {
      bounds.admit(entry);
    } catch (err) {
      return extraction.fail(err, index);
    }
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
    try {
      bounds.admit(entry);
    } catch (err) {
      return extraction.fail(err, index);
    }
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
      format === 'tar' ? new PassThrough({ readableHighWaterMark: INFLATE_AHEAD }) : createGunzip(inflateOptions),
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
