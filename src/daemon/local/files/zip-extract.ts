/**
 * Extracting a `.zip` into an empty staging folder (the file manager's
 * decompress, docs/reference/files-and-sftp.md) by the restore's rules (docs/reference/backups-and-restores.md#restoring, docs/RESTORE.md):
 * yauzl reads the central directory and refuses absolute names and `..`
 * (and so does entrySegments here); each entry is admitted by the restore's
 * bounds (entries, bytes against the disk limit, the file system's free
 * space) on its declared size before anything is written for it, and yauzl
 * checks the bytes really inflated against that declared size
 * (validateEntrySizes), so a zip bomb that lies about its sizes fails at the
 * first byte past its claim. Links inside a zip are refused (Wings does not
 * create them either); files are created with O_EXCL + O_NOFOLLOW through
 * the staging tree, which refuses a parent that is a link.
 */
import fs from 'node:fs';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';
import { fileMode } from '../archive/modes.js';
import { entrySegments } from '../archive/path-safety.js';
import { RestoreError, asRestoreError, quote } from '../archive/restore-error.js';
import { ExtractionBounds, type ExtractLimits } from '../archive/extract/bounds.js';
import { StagingTree } from '../archive/extract/staging-tree.js';

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
/** Zip's "made by" host system for Unix: only then do the high bits of the external attributes hold a mode. */
const MADE_BY_UNIX = 3;

function openZip(fd: number): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) =>
    yauzl.fromFd(fd, { lazyEntries: true, autoClose: false, validateEntrySizes: true, decodeStrings: true }, (err, zip) =>
      err ? reject(err) : resolve(zip),
    ),
  );
}

function openEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<NodeJS.ReadableStream> {
  return new Promise((resolve, reject) => zip.openReadStream(entry, (err, stream) => (err ? reject(err) : resolve(stream))));
}

/** The Unix mode stored with an entry, or undefined when it holds none. */
function unixMode(entry: yauzl.Entry): number | undefined {
  if (entry.versionMadeBy >> 8 !== MADE_BY_UNIX) return undefined;
  const mode = (entry.externalFileAttributes >>> 16) & 0xffff;
  return mode === 0 ? undefined : mode;
}

/** Extracts the zip open at `fd` into `stagingRoot` (empty); throws a RestoreError, leaving what was staged to the caller. */
export async function extractZip(fd: number, stagingRoot: string, limits: ExtractLimits): Promise<void> {
  const bounds = new ExtractionBounds(stagingRoot, limits);
  const staging = new StagingTree(stagingRoot);
  let zip: yauzl.ZipFile;
  try {
    zip = await openZip(fd);
  } catch (err) {
    throw asRestoreError(err, 'the zip archive is corrupt');
  }
  // Not zip.close(): it would close the descriptor, which belongs to the caller.
  await new Promise<void>((resolve, reject) => {
    zip.on('error', (err: unknown) => reject(asRestoreError(err, 'the zip archive is corrupt')));
    zip.on('end', () => resolve());
    zip.on('entry', (entry: yauzl.Entry) => {
      extractEntry(zip, entry, bounds, staging).then(
        () => zip.readEntry(),
        (err: unknown) => reject(asRestoreError(err, `zip entry ${quote(entry.fileName)} could not be extracted`)),
      );
    });
    zip.readEntry();
  });
}

async function extractEntry(
  zip: yauzl.ZipFile,
  entry: yauzl.Entry,
  bounds: ExtractionBounds,
  staging: StagingTree,
): Promise<void> {
  const name = entry.fileName;
  const isFolder = name.endsWith('/');
  bounds.admit({ path: name, size: isFolder ? 0 : entry.uncompressedSize });
  const segments = entrySegments(name);
  const mode = unixMode(entry);
  const type = mode === undefined ? (isFolder ? S_IFDIR : S_IFREG) : mode & S_IFMT;
  if (type === S_IFLNK) throw new RestoreError(`zip entry ${quote(name)} is a symlink; links in zip archives are refused`);
  if (segments.length === 0) return; // `./`: the folder itself
  if (isFolder || type === S_IFDIR) {
    staging.makeDirectory({ path: name, mode } as Parameters<StagingTree['makeDirectory']>[0], segments);
    return;
  }
  if (type !== S_IFREG) throw new RestoreError(`zip entry ${quote(name)} is not a file or a folder`);
  const target = staging.prepareParents(name, segments);
  const stream = await openEntry(zip, entry);
  const out = staging.createFile(name, target);
  try {
    // yauzl fails the stream when the inflated bytes differ from the declared size.
    await pipeline(stream, fs.createWriteStream('', { fd: out, autoClose: false }));
    fs.fchmodSync(out, fileMode(mode === undefined ? undefined : mode & 0o777));
  } finally {
    fs.closeSync(out);
  }
}
