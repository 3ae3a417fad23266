/**
 * Moves a fully staged restore into the volume (docs/RESTORE.md). Only renames
 * and chmods, all within one file system, each journaled so that a failure
 * halfway (a permission, an I/O error) can be undone and the volume left as it
 * was. Nothing in the volume is ever followed: every decision is made on
 * `lstat`, and a symlink found in the way is moved aside as itself.
 */
import type { Stats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { lstatOrNull } from './lstat-or-null.js';

/** The two changes a merge makes; swappable so tests can make one fail halfway. */
export interface MergeOperations {
  rename(from: string, to: string): Promise<void>;
  chmod(target: string, mode: number): Promise<void>;
}

const realOperations: MergeOperations = {
  rename: (from, to) => fs.rename(from, to),
  chmod: (target, mode) => fs.chmod(target, mode),
};

export class VolumeMerge {
  private readonly undoSteps: Array<() => Promise<void>> = [];
  private displacedCount = 0;

  /**
   * @param volumeDir the server's volume
   * @param displacedDir an empty folder on the volume's file system, where replaced things wait until the restore is done
   */
  constructor(
    private readonly volumeDir: string,
    private readonly displacedDir: string,
    private readonly operations: MergeOperations = realOperations,
  ) {}

  /** Truncate: moves everything inside the volume aside; the volume folder itself stays. */
  async emptyVolume(): Promise<void> {
    for (const name of await fs.readdir(this.volumeDir)) {
      const target = path.join(this.volumeDir, name);
      await this.displace(target, await fs.lstat(target));
    }
  }

  /**
   * Moves the staged tree into the volume: a staged entry is renamed into place
   * where nothing is; what is in its way is moved aside first (a file, a
   * directory replaced by a file, or a symlink whatever it points to); where
   * both sides are real directories, their contents merge.
   */
  async mergeFrom(stagedRoot: string): Promise<void> {
    await this.mergeDirectory(stagedRoot, this.volumeDir);
  }

  /** Undoes every change, newest first. False when some step could not be undone. */
  async rollback(): Promise<boolean> {
    let complete = true;
    while (this.undoSteps.length > 0) {
      const step = this.undoSteps.pop()!;
      try {
        await step();
      } catch {
        complete = false;
      }
    }
    return complete;
  }

  private async mergeDirectory(stagedDir: string, destinationDir: string): Promise<void> {
    // The whole listing first: renaming entries out of a directory while reading it may skip some.
    for (const name of await fs.readdir(stagedDir)) {
      const staged = path.join(stagedDir, name);
      const destination = path.join(destinationDir, name);
      const [stagedStat, existing] = await Promise.all([fs.lstat(staged), lstatOrNull(destination)]);
      if (stagedStat.isDirectory() && existing?.isDirectory()) {
        // lstat: a symlink to a directory is not a directory here, so the merge never descends through one.
        await this.setMode(destination, existing.mode & 0o7777, stagedStat.mode & 0o777);
        await this.mergeDirectory(staged, destination);
        continue;
      }
      if (existing !== null) await this.displace(destination, existing);
      await this.rename(staged, destination);
    }
  }

  private async displace(target: string, stat: Stats): Promise<void> {
    // Moving a directory to another parent rewrites its '..' entry, which needs write permission on it.
    if (stat.isDirectory() && (stat.mode & 0o200) === 0)
      await this.setMode(target, stat.mode & 0o7777, (stat.mode & 0o7777) | 0o200);
    this.displacedCount += 1;
    await this.rename(target, path.join(this.displacedDir, String(this.displacedCount)));
  }

  private async rename(from: string, to: string): Promise<void> {
    await this.operations.rename(from, to);
    this.undoSteps.push(() => this.operations.rename(to, from));
  }

  /** chmod of a path just seen by lstat as a real directory. */
  private async setMode(directory: string, current: number, wanted: number): Promise<void> {
    if (current === wanted) return;
    await this.operations.chmod(directory, wanted);
    this.undoSteps.push(() => this.operations.chmod(directory, current));
  }
}
