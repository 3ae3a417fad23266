/**
 * Produces the uncompressed tar stream of a volume, one buffer at a time, so
 * that a backup's memory does not grow with the volume: a depth-first walk that
 * holds one directory listing (and one directory descriptor) per level of the
 * current path, and reads files in fixed-size chunks as the consumer asks for
 * them.
 *
 * The walk never resolves a path from the volume's root: each folder is opened
 * by descriptor from its held parent and each file with O_NOFOLLOW from its
 * held folder (SafeDir), so a server's process that swaps a folder for a
 * symlink mid-walk gets the link archived (swapped before the folder was
 * opened) or the real folder (swapped after), never what the link points to.
 */
import fs from 'node:fs';
import { Header, Pax, type HeaderData } from 'tar';
import { SafeDir } from '../volume/safe-dir.js';
import { IgnoreMatcher } from './ignore-matcher.js';

const BLOCK = 512;
const READ_CHUNK = 64 * 1024;
const END_OF_ARCHIVE = Buffer.alloc(2 * BLOCK);

/** The tar header block(s) for one entry: a pax header first when the ustar fields cannot hold it. */
function headerBlocks(data: HeaderData & { path: string }): Buffer {
  const header = new Header({ uid: 0, gid: 0, uname: '', gname: '', linkpath: '', ...data });
  const needsPax = header.encode();
  const block = header.block!;
  if (!needsPax) return block;
  // Long or non-ASCII names, and sizes over 8 GiB, go in a pax header, as node-tar and GNU tar read them.
  const pax = new Pax({ path: data.path, linkpath: data.linkpath, size: data.size, mtime: data.mtime }).encode();
  return Buffer.concat([pax, block]);
}

function padding(size: number): Buffer | null {
  const rest = size % BLOCK;
  return rest === 0 ? null : Buffer.alloc(BLOCK - rest);
}

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

/** The entry changed kind or vanished between the listing and its use. */
function isVanished(err: unknown): boolean {
  const code = errnoCode(err);
  // ENOENT: deleted since it was listed; ELOOP/ENOTDIR: replaced by a symlink (or a file) before it was opened.
  return code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR';
}

function lstatAsync(entry: string): Promise<fs.Stats> {
  return new Promise((resolve, reject) => fs.lstat(entry, (err, stat) => (err ? reject(err) : resolve(stat))));
}

function readlinkAsync(entry: string): Promise<string> {
  return new Promise((resolve, reject) => fs.readlink(entry, (err, target) => (err ? reject(err) : resolve(target))));
}

function fstatAsync(fd: number): Promise<fs.Stats> {
  return new Promise((resolve, reject) => fs.fstat(fd, (err, stat) => (err ? reject(err) : resolve(stat))));
}

function readAsync(fd: number, buffer: Buffer, position: number): Promise<number> {
  return new Promise((resolve, reject) =>
    fs.read(fd, buffer, 0, buffer.length, position, (err, bytesRead) => (err ? reject(err) : resolve(bytesRead))),
  );
}

/**
 * The tar stream of everything in `volumeDir`, entries named relative to it
 * (`dir/`, `dir/file`), parents before children, names sorted so a volume
 * always gives the same order. Symlinks are stored as symlinks, never followed.
 * Hard links are stored as separate files (a restore refuses hard link
 * entries). Sockets, FIFOs and devices are skipped: a restore refuses them.
 * A file that vanishes while the walk runs is skipped; one that shrinks while
 * it is read fails the backup, as Wings does. The volume root itself must be
 * a real folder, not a link.
 */
export async function* tarStream(volumeDir: string, matcher: IgnoreMatcher, signal?: AbortSignal): AsyncGenerator<Buffer> {
  const root = SafeDir.open(volumeDir);
  try {
    yield* walkDirectory(root, '', matcher, signal);
  } finally {
    root.close();
  }
  yield END_OF_ARCHIVE;
}

/**
 * The tar stream of the named entries of a held folder (the file manager's
 * compress, docs/reference/files-and-sftp.md), each walked as tarStream walks a volume: entries named
 * relative to the folder, links stored as links, nothing followed. A name
 * that is not there is skipped.
 */
export async function* tarStreamOfEntries(dir: SafeDir, names: readonly string[], signal?: AbortSignal): AsyncGenerator<Buffer> {
  yield* walkNames(dir, '', [...names].sort(), NOTHING_IGNORED, signal);
  yield END_OF_ARCHIVE;
}

const NOTHING_IGNORED = new IgnoreMatcher([]);

async function* walkDirectory(
  dir: SafeDir,
  relativeDir: string,
  matcher: IgnoreMatcher,
  signal: AbortSignal | undefined,
): AsyncGenerator<Buffer> {
  const names = (await dir.listAsync()).map((entry) => entry.name).sort();
  yield* walkNames(dir, relativeDir, names, matcher, signal);
}

async function* walkNames(
  dir: SafeDir,
  relativeDir: string,
  names: readonly string[],
  matcher: IgnoreMatcher,
  signal: AbortSignal | undefined,
): AsyncGenerator<Buffer> {
  for (const name of names) {
    signal?.throwIfAborted();
    const relative = relativeDir === '' ? name : `${relativeDir}/${name}`;
    let stat;
    try {
      stat = await lstatAsync(dir.entryPath(name));
    } catch (err) {
      if (isVanished(err)) continue;
      throw err;
    }
    if (stat.isDirectory()) {
      if (matcher.ignores(relative, true)) continue;
      let child: SafeDir;
      try {
        child = await dir.openDirAsync(name);
      } catch (err) {
        if (!isVanished(err)) throw err;
        // Swapped for a link (or a file) since the lstat: archive what is there now, as what it is.
        const now = await lstatAsync(dir.entryPath(name)).catch(() => null);
        if (now?.isSymbolicLink() && !matcher.ignores(relative, false)) yield* linkEntry(dir, name, relative, now);
        continue;
      }
      try {
        // The header describes the folder actually held, not what the lstat saw.
        const held = await fstatAsync(child.fd);
        yield headerBlocks({ path: `${relative}/`, type: 'Directory', mode: held.mode & 0o7777, size: 0, mtime: held.mtime });
        yield* walkDirectory(child, relative, matcher, signal);
      } finally {
        child.close();
      }
    } else if (stat.isSymbolicLink()) {
      if (matcher.ignores(relative, false)) continue;
      yield* linkEntry(dir, name, relative, stat);
    } else if (stat.isFile()) {
      if (matcher.ignores(relative, false)) continue;
      yield* fileEntry(dir, name, relative, signal);
    }
    // Anything else (socket, FIFO, device) is not server data a restore could bring back.
  }
}

async function* linkEntry(dir: SafeDir, name: string, relative: string, stat: fs.Stats): AsyncGenerator<Buffer> {
  let target: string;
  try {
    target = await readlinkAsync(dir.entryPath(name));
  } catch (err) {
    // EINVAL: no longer a link.
    if (isVanished(err) || errnoCode(err) === 'EINVAL') return;
    throw err;
  }
  yield headerBlocks({ path: relative, type: 'SymbolicLink', linkpath: target, mode: 0o777, size: 0, mtime: stat.mtime });
}

async function* fileEntry(dir: SafeDir, name: string, relative: string, signal: AbortSignal | undefined): AsyncGenerator<Buffer> {
  let fd: number;
  try {
    // O_NOFOLLOW (added by SafeDir): never read through a symlink swapped in since the lstat.
    // O_NONBLOCK: a FIFO swapped in cannot hang the open (it is then skipped below).
    fd = await dir.openFileAsync(name, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (err) {
    if (isVanished(err)) return;
    throw err;
  }
  try {
    const stat = await fstatAsync(fd);
    if (!stat.isFile()) return;
    const size = stat.size;
    yield headerBlocks({ path: relative, type: 'File', mode: stat.mode & 0o7777, size, mtime: stat.mtime });
    let remaining = size;
    while (remaining > 0) {
      signal?.throwIfAborted();
      // A fresh buffer per chunk: the consumer may still hold the previous one.
      const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, remaining));
      const bytesRead = await readAsync(fd, chunk, size - remaining);
      if (bytesRead === 0) throw new Error(`'${relative}' shrank while it was being archived`);
      remaining -= bytesRead;
      yield bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead);
    }
    const pad = padding(size);
    if (pad) yield pad;
  } finally {
    fs.closeSync(fd);
  }
}
