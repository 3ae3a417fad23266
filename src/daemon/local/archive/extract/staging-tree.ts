import fs, { constants as fsConstants } from 'node:fs';
import path from 'node:path';
import type { ReadEntry } from 'tar';
import { directoryMode } from '../modes.js';
import { checkSymlinkTarget } from '../path-safety.js';
import { RestoreError, quote } from '../restore-error.js';
import { openFile } from './fs-callbacks.js';

const NEW_FILE_FLAGS = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;

function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

function lstatOrNull(target: string): fs.Stats | null {
  return fs.lstatSync(target, { throwIfNoEntry: false }) ?? null;
}

/**
 * The folder entries are extracted into. Only this code writes there, so the
 * directories it has created or checked are remembered instead of being
 * checked again for every entry below them (memory grows with the number of
 * directories, not with the archive's bytes).
 *
 * Its calls are synchronous: each is one system call of a few microseconds,
 * and entries are decided one after another, so a round trip through the
 * thread pool per call only added waiting (a 5,600-entry tree of small files
 * and folders: 1.1 s with awaited calls, 0.5-0.7 s with these;
 * docs/PERFORMANCE.md). Only the bodies of large files are written in the
 * background.
 */
export class StagingTree {
  private readonly knownDirectories = new Set<string>();

  constructor(private readonly root: string) {}

  /**
   * Makes the entry's parent directories, creating missing ones (entries may
   * come before their folder's own entry). A parent that is a symlink is
   * refused outright, even one the archive made pointing inside itself: then
   * nothing is ever written through a link, and no reasoning about where a
   * link leads is needed.
   */
  prepareParents(entryPath: string, segments: string[]): string {
    let relative = '';
    for (let i = 0; i < segments.length - 1; i++) {
      relative = relative === '' ? segments[i]! : `${relative}/${segments[i]}`;
      if (this.knownDirectories.has(relative)) continue;
      const absolute = path.join(this.root, relative);
      const stat = lstatOrNull(absolute);
      if (stat === null) {
        fs.mkdirSync(absolute);
        fs.chmodSync(absolute, directoryMode(undefined));
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
  private clearForNonDirectory(entryPath: string, absolute: string): void {
    const existing = lstatOrNull(absolute);
    if (existing === null) return;
    if (existing.isDirectory()) {
      throw new RestoreError(`archive entry ${quote(entryPath)} would replace a directory of the same archive`);
    }
    fs.unlinkSync(absolute);
  }

  /** A new file for a file entry (mode 0600 until it is complete). O_EXCL + O_NOFOLLOW: never something reached through a link. */
  createFile(entryPath: string, absolute: string): number {
    try {
      return fs.openSync(absolute, NEW_FILE_FLAGS, 0o600);
    } catch (err) {
      // Something is there already (an earlier entry of the same path): what tar would do is decided on lstat.
      if (errorCode(err) !== 'EEXIST') throw err;
    }
    this.clearForNonDirectory(entryPath, absolute);
    return fs.openSync(absolute, NEW_FILE_FLAGS, 0o600);
  }

  /**
   * A small file written whole: created as createFile does, but in the thread
   * pool (a create is the costly call, on some disks half a millisecond of
   * kernel time, and several can run at once), then written, moded and timed
   * before it is closed.
   */
  async writeSmallFile(
    entryPath: string,
    absolute: string,
    body: Buffer[],
    mode: number,
    mtime: Date | undefined,
  ): Promise<number> {
    let fd: number;
    try {
      fd = await openFile(absolute, NEW_FILE_FLAGS, 0o600);
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw err;
      fd = this.createFile(entryPath, absolute);
    }
    try {
      let written = 0;
      for (const chunk of body) {
        for (let offset = 0; offset < chunk.length;) offset += fs.writeSync(fd, chunk, offset);
        written += chunk.length;
      }
      fs.fchmodSync(fd, mode);
      if (mtime) fs.futimesSync(fd, mtime, mtime);
      return written;
    } finally {
      fs.closeSync(fd);
    }
  }

  makeDirectory(entry: ReadEntry, segments: string[]): void {
    const absolute = this.prepareParents(entry.path, segments);
    try {
      fs.mkdirSync(absolute);
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw err;
      const existing = fs.lstatSync(absolute);
      if (!existing.isDirectory()) {
        throw new RestoreError(`archive entry ${quote(entry.path)} is a directory where the same archive put a file or symlink`);
      }
    }
    // Owner rwx always: see directoryMode. A real directory made here, so chmod follows nothing.
    fs.chmodSync(absolute, directoryMode(entry.mode));
    this.knownDirectories.add(segments.join('/'));
  }

  makeSymlink(entry: ReadEntry, segments: string[]): void {
    const target = entry.linkpath ?? '';
    checkSymlinkTarget(entry.path, target);
    const absolute = this.prepareParents(entry.path, segments);
    this.clearForNonDirectory(entry.path, absolute);
    fs.symlinkSync(target, absolute);
  }
}
