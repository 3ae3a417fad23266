/**
 * Produces the uncompressed tar stream of a volume, one buffer at a time, so
 * that a backup's memory does not grow with the volume: a depth-first walk that
 * holds one directory listing per level of the current path, and reads files in
 * fixed-size chunks as the consumer asks for them.
 */
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Header, Pax, type HeaderData } from 'tar';
import type { IgnoreMatcher } from './ignore-matcher.js';

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

function isVanished(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  // ENOENT: deleted since it was listed; ELOOP: replaced by a symlink before it was opened.
  return code === 'ENOENT' || code === 'ELOOP';
}

/**
 * The tar stream of everything in `volumeDir`, entries named relative to it
 * (`dir/`, `dir/file`), parents before children, names sorted so a volume
 * always gives the same order. Symlinks are stored as symlinks, never followed.
 * Hard links are stored as separate files (a restore refuses hard link
 * entries). Sockets, FIFOs and devices are skipped: a restore refuses them.
 * A file that vanishes while the walk runs is skipped; one that shrinks while
 * it is read fails the backup, as Wings does.
 */
export async function* tarStream(volumeDir: string, matcher: IgnoreMatcher, signal?: AbortSignal): AsyncGenerator<Buffer> {
  const root = await fs.stat(volumeDir);
  if (!root.isDirectory()) throw new Error(`the volume ${volumeDir} is not a directory`);
  yield* walkDirectory(volumeDir, '', matcher, signal);
  yield END_OF_ARCHIVE;
}

async function* walkDirectory(
  absoluteDir: string,
  relativeDir: string,
  matcher: IgnoreMatcher,
  signal: AbortSignal | undefined,
): AsyncGenerator<Buffer> {
  let names: string[];
  try {
    names = await fs.readdir(absoluteDir);
  } catch (err) {
    if (relativeDir !== '' && isVanished(err)) return;
    throw err;
  }
  names.sort();
  for (const name of names) {
    signal?.throwIfAborted();
    const absolute = path.join(absoluteDir, name);
    const relative = relativeDir === '' ? name : `${relativeDir}/${name}`;
    let stat;
    try {
      stat = await fs.lstat(absolute);
    } catch (err) {
      if (isVanished(err)) continue;
      throw err;
    }
    if (stat.isDirectory()) {
      if (matcher.ignores(relative, true)) continue;
      yield headerBlocks({ path: `${relative}/`, type: 'Directory', mode: stat.mode & 0o7777, size: 0, mtime: stat.mtime });
      yield* walkDirectory(absolute, relative, matcher, signal);
    } else if (stat.isSymbolicLink()) {
      if (matcher.ignores(relative, false)) continue;
      let target: string;
      try {
        target = await fs.readlink(absolute);
      } catch (err) {
        if (isVanished(err) || (err as NodeJS.ErrnoException).code === 'EINVAL') continue;
        throw err;
      }
      yield headerBlocks({ path: relative, type: 'SymbolicLink', linkpath: target, mode: 0o777, size: 0, mtime: stat.mtime });
    } else if (stat.isFile()) {
      if (matcher.ignores(relative, false)) continue;
      yield* fileEntry(absolute, relative, signal);
    }
    // Anything else (socket, FIFO, device) is not server data a restore could bring back.
  }
}

async function* fileEntry(absolute: string, relative: string, signal: AbortSignal | undefined): AsyncGenerator<Buffer> {
  let handle;
  try {
    // O_NOFOLLOW: never read through a symlink swapped in since the lstat.
    // O_NONBLOCK: a FIFO swapped in cannot hang the open (it is then skipped below).
    handle = await fs.open(absolute, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch (err) {
    if (isVanished(err)) return;
    throw err;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return;
    const size = stat.size;
    yield headerBlocks({ path: relative, type: 'File', mode: stat.mode & 0o7777, size, mtime: stat.mtime });
    let remaining = size;
    while (remaining > 0) {
      signal?.throwIfAborted();
      // A fresh buffer per chunk: the consumer may still hold the previous one.
      const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, remaining));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, size - remaining);
      if (bytesRead === 0) throw new Error(`'${relative}' shrank while it was being archived`);
      remaining -= bytesRead;
      yield bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead);
    }
    const pad = padding(size);
    if (pad) yield pad;
  } finally {
    await handle.close();
  }
}
