/**
 * Extracts a gzip tarball into an empty staging folder, deciding every entry
 * itself (docs/RESTORE.md). node-tar's streaming `Parser` only splits the
 * stream into entries (headers, pax and GNU long names, checksums); nothing
 * here uses its `Unpack`, whose defaults skip bad entries with a warning
 * instead of failing. Every parser warning fails the extraction.
 */
import { constants as fsConstants } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { lstatOrNull } from './archive-merge.js';
import { RestoreError, checkSymlinkTarget, directoryMode, entrySegments, fileMode, quote } from './archive-safety.js';

const CHUNK = 64 * 1024;
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

async function writeAll(handle: FileHandle, chunk: Buffer): Promise<void> {
  for (let offset = 0; offset < chunk.length;) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset);
    offset += bytesWritten;
  }
}

/**
 * The folder entries are extracted into. Only this code writes there, so the
 * directories it has created or checked are remembered instead of being
 * checked again for every entry below them (memory grows with the number of
 * directories, not with the archive's bytes).
 */
class StagingTree {
  private readonly knownDirectories = new Set<string>();

  constructor(private readonly root: string) {}

  async place(entry: ReadEntry): Promise<void> {
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
        return this.writeFile(entry, segments);
      case 'Directory':
        await this.makeDirectory(entry, segments);
        return void entry.resume();
      case 'SymbolicLink':
        await this.makeSymlink(entry, segments);
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

  /**
   * Makes the entry's parent directories, creating missing ones (entries may
   * come before their folder's own entry). A parent that is a symlink is
   * refused outright, even one the archive made pointing inside itself: then
   * nothing is ever written through a link, and no reasoning about where a
   * link leads is needed.
   */
  private async prepareParents(entryPath: string, segments: string[]): Promise<string> {
    let relative = '';
    for (const segment of segments.slice(0, -1)) {
      relative = relative === '' ? segment : `${relative}/${segment}`;
      if (this.knownDirectories.has(relative)) continue;
      const absolute = path.join(this.root, relative);
      const stat = await lstatOrNull(absolute);
      if (stat === null) {
        await fs.mkdir(absolute);
        await fs.chmod(absolute, directoryMode(undefined));
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
  private async clearForNonDirectory(entryPath: string, absolute: string): Promise<void> {
    const existing = await lstatOrNull(absolute);
    if (existing === null) return;
    if (existing.isDirectory()) {
      throw new RestoreError(`archive entry ${quote(entryPath)} would replace a directory of the same archive`);
    }
    await fs.unlink(absolute);
  }

  private async writeFile(entry: ReadEntry, segments: string[]): Promise<void> {
    const absolute = await this.prepareParents(entry.path, segments);
    await this.clearForNonDirectory(entry.path, absolute);
    // O_EXCL + O_NOFOLLOW: the file is new, never something reached through a link.
    const handle = await fs.open(absolute, NEW_FILE_FLAGS, 0o600);
    try {
      let written = 0;
      // Pulling chunk by chunk is the backpressure: the parser is not fed more until this entry drains.
      for await (const chunk of entry as AsyncIterable<Buffer>) {
        await writeAll(handle, chunk);
        written += chunk.length;
      }
      if (written !== entry.size) throw new RestoreError(`archive entry ${quote(entry.path)} is truncated`);
      await handle.chmod(fileMode(entry.mode));
      if (entry.mtime && !Number.isNaN(entry.mtime.getTime())) await handle.utimes(entry.mtime, entry.mtime);
    } finally {
      await handle.close();
    }
  }

  private async makeDirectory(entry: ReadEntry, segments: string[]): Promise<void> {
    const absolute = await this.prepareParents(entry.path, segments);
    const existing = await lstatOrNull(absolute);
    if (existing === null) {
      await fs.mkdir(absolute);
    } else if (!existing.isDirectory()) {
      throw new RestoreError(`archive entry ${quote(entry.path)} is a directory where the same archive put a file or symlink`);
    }
    // Owner rwx always: see directoryMode. A real directory made here, so chmod follows nothing.
    await fs.chmod(absolute, directoryMode(entry.mode));
    this.knownDirectories.add(segments.join('/'));
  }

  private async makeSymlink(entry: ReadEntry, segments: string[]): Promise<void> {
    const target = entry.linkpath ?? '';
    checkSymlinkTarget(entry.path, target);
    const absolute = await this.prepareParents(entry.path, segments);
    await this.clearForNonDirectory(entry.path, absolute);
    await fs.symlink(target, absolute);
  }
}

/**
 * Extracts the gzip tarball open in `archive` into `stagingRoot` (an empty
 * directory). Resolves only when every entry was extracted and the archive
 * ended cleanly (gzip trailer checked, tar end-of-archive marker seen); throws
 * a RestoreError otherwise, leaving whatever was staged for the caller to
 * remove. Entries are handled strictly one after another.
 */
export async function extractArchive(archive: FileHandle, stagingRoot: string): Promise<void> {
  const staging = new StagingTree(stagingRoot);
  // gzip is undone below, with node's zlib; the parser sees plain tar only.
  const parser = new Parser({ strict: false, brotli: false, zstd: false });

  let failure: unknown = null;
  let announceFailure!: () => void;
  const failed = new Promise<void>((resolve) => (announceFailure = resolve));
  let current: ReadEntry | null = null;
  const fail = (err: unknown): void => {
    if (failure !== null) return;
    failure = err;
    announceFailure();
    // A fresh error: the parser decorates what it is given, and `failure` is reported as it is.
    parser.abort(new Error('extraction stopped'));
    // Ends a file body being written, so its handler returns instead of waiting for bytes that will not come.
    current?.destroy();
  };

  let sawEndOfArchive = false;
  let entries = 0;
  let handling: Promise<void> = Promise.resolve();
  const parserEnded = new Promise<void>((resolve) => parser.once('end', () => resolve()));

  parser.on('eof', () => {
    sawEndOfArchive = true;
  });
  // The parser hands over the next entry once this one has ended, i.e. once it
  // was consumed or resumed here; a file's handler may still be closing the
  // file then, so the chain keeps handlers strictly one after another.
  parser.on('entry', (entry: ReadEntry) => {
    entries += 1;
    entry.on('error', fail);
    handling = handling
      .then(async () => {
        if (failure !== null) return;
        current = entry;
        try {
          await staging.place(entry);
        } finally {
          current = null;
        }
      })
      .catch(fail);
  });
  // Entries the parser will not hand over: unknown types (sparse files, volume labels...) and oversized meta headers.
  parser.on('ignoredEntry', (entry: ReadEntry) => {
    entries += 1;
    fail(new RestoreError(`archive entry ${quote(entry.path)} has the unsupported type ${entry.type}`));
  });
  parser.on('warn', (code: string, message: string) => {
    // The one warning that is no defect: a well-formed archive with no entries at all (an empty volume's backup).
    if (code === 'TAR_BAD_ARCHIVE' && sawEndOfArchive && entries === 0) return;
    fail(new RestoreError(`the archive is corrupt: ${oneLine(message)}`));
  });
  parser.on('error', (err: Error) => fail(asRestoreError(err, 'the archive is corrupt')));

  const drained = () => new Promise<void>((resolve) => parser.once('drain', () => resolve()));
  try {
    await pipeline(
      archive.createReadStream({ start: 0, autoClose: false, highWaterMark: CHUNK }),
      createGunzip({ chunkSize: CHUNK }),
      async (tar: AsyncIterable<Buffer>) => {
        for await (const chunk of tar) {
          if (failure !== null) throw failure;
          // What follows the end-of-archive marker is ignored (as tar does), but still read, so gzip's CRC is checked.
          if (sawEndOfArchive) continue;
          if (!parser.write(chunk)) await Promise.race([drained(), failed]);
        }
        if (failure !== null) throw failure;
        parser.end();
        await Promise.race([parserEnded, failed]);
      },
    );
  } catch (err) {
    fail(asRestoreError(err, 'the archive is corrupt'));
  }
  // Let the entry being handled finish, or notice the failure, before the caller removes the staging folder.
  for (let settled = handling; ; settled = handling) {
    await settled;
    if (settled === handling) break;
  }
  if (failure !== null) throw asRestoreError(failure, 'the archive could not be extracted');
  if (!sawEndOfArchive) throw new RestoreError('the archive is truncated: it ends before its end-of-archive marker');
}
