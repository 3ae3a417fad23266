/**
 * Moves a fully staged restore into the volume (docs/RESTORE.md). Only renames,
 * chmods and mkdirs (of our own folders), all within one file system, every one
 * of them relative to a folder held by descriptor (`SafeDir`): the server's
 * process swapping a folder for a symlink meanwhile cannot make the merge read,
 * write or move anything outside the volume, and nothing is ever followed.
 * Two properties matter:
 *
 * - Replayable: every step's state can be read off the file system, so after
 *   a crash the same calls, run again, finish the move (roll forward, "Crash
 *   safety"). A staged entry still in place has not moved; a volume entry
 *   displaced to `displaced/<its path>` with its staged replacement still
 *   staged is a half-done step, and the replay completes it.
 * - Undoable while the process lives: every rename and chmod is also noted in
 *   memory (as paths relative to the three roots, walked again through
 *   `SafeDir` when undone), so a failure halfway (a permission, an I/O error)
 *   is undone newest first and the volume left as it was.
 */
import fs from 'node:fs';
import { crashPoint } from '../../../crash-point.js';
import { SafeDir } from '../volume/safe-dir.js';

/** The two changes a merge makes, on `/proc/self/fd/...` paths of held folders; swappable so tests can make one fail. */
export interface MergeOperations {
  rename(from: string, to: string): Promise<void>;
  chmod(target: string, mode: number): Promise<void>;
}

const realOperations: MergeOperations = {
  rename: (from, to) => fs.promises.rename(from, to),
  chmod: (target, mode) => fs.promises.chmod(target, mode),
};

/** O_PATH (not in Node's constants): a handle on a folder that needs no permission on it. */
const O_PATH = 0o10000000;
const { O_DIRECTORY, O_NOFOLLOW } = fs.constants;

type Side = 'volume' | 'staged' | 'displaced';
/** An entry as a side and its path segments below that side's root. */
interface Place {
  side: Side;
  segments: readonly string[];
}

export class VolumeMerge {
  private readonly undoSteps: Array<() => Promise<void>> = [];
  /** How many undo steps the emptying (truncate) took: those are undone last, after every staged entry went back. */
  private emptyingSteps: number | undefined;
  /** The staged tree being merged (set by mergeFrom), for walks back to a staged place when undoing. */
  private stagedRoot = '';

  /**
   * @param volumeDir the server's volume
   * @param displacedDir a folder on the volume's file system (made if missing), where replaced things wait,
   *   each at its own path relative to the volume, until the restore is done
   */
  constructor(
    private readonly volumeDir: string,
    private readonly displacedDir: string,
    private readonly operations: MergeOperations = realOperations,
  ) {}

  /**
   * Truncate: moves everything inside the volume aside; the volume folder itself
   * stays (it may be a mount point or a process's working directory). Replayable
   * only before any staged entry was moved in: everything in the volume is then old.
   */
  async emptyVolume(): Promise<void> {
    fs.mkdirSync(this.displacedDir, { recursive: true, mode: 0o700 });
    const volume = SafeDir.open(this.volumeDir);
    try {
      for (const entry of volume.list()) await this.displace(volume, [entry.name]);
      this.emptyingSteps = this.undoSteps.length;
    } finally {
      volume.close();
    }
  }

  /**
   * Moves the staged tree into the volume: a staged entry is renamed into place
   * where nothing is; what is in its way is moved aside first (a file, a
   * directory replaced by a file, or a symlink whatever it points to); where
   * both sides are real directories, their contents merge.
   */
  async mergeFrom(stagedRoot: string): Promise<void> {
    this.stagedRoot = stagedRoot;
    const staged = SafeDir.open(stagedRoot);
    const volume = SafeDir.open(this.volumeDir);
    try {
      await this.mergeDirectory(staged, volume, []);
    } finally {
      staged.close();
      volume.close();
    }
  }

  /**
   * Undoes every change, newest first. False when some step could not be undone.
   * `beforeUndoingEmptying` runs once every staged entry is back in the staged
   * tree and only the truncate's emptying remains to undo: the volume then holds
   * old entries only, which is what the journal must say from there on.
   */
  async rollback(beforeUndoingEmptying?: () => Promise<void>): Promise<boolean> {
    let complete = true;
    while (this.undoSteps.length > 0) {
      if (this.undoSteps.length === this.emptyingSteps && beforeUndoingEmptying) {
        await beforeUndoingEmptying().catch(() => (complete = false));
        this.emptyingSteps = undefined;
      }
      const step = this.undoSteps.pop()!;
      try {
        await step();
      } catch {
        complete = false;
      }
    }
    return complete;
  }

  private async mergeDirectory(staged: SafeDir, volume: SafeDir, segments: string[]): Promise<void> {
    // The whole listing first: renaming entries out of a directory while reading it may skip some.
    for (const { name } of staged.list()) {
      const here = [...segments, name];
      const stagedStat = staged.lstat(name);
      if (stagedStat === null) continue;
      const existing = volume.lstat(name);
      if (stagedStat.isDirectory() && existing?.isDirectory()) {
        // Opened with O_NOFOLLOW: a folder swapped for a link since the lstat is refused, never descended into.
        await this.setMode(volume, name, { side: 'volume', segments: here }, existing.mode & 0o7777, stagedStat.mode & 0o777);
        const stagedChild = staged.openDir(name);
        try {
          const volumeChild = volume.openDir(name);
          try {
            await this.mergeDirectory(stagedChild, volumeChild, here);
          } finally {
            volumeChild.close();
          }
        } finally {
          stagedChild.close();
        }
        continue;
      }
      if (existing !== null) await this.displace(volume, here);
      await this.rename(staged, name, volume, { side: 'staged', segments: here }, { side: 'volume', segments: here });
      crashPoint('restore-merge-step');
    }
  }

  /** Moves the volume's entry `segments` (the last one a name in `volume`) to the same path under the displaced folder. */
  private async displace(volume: SafeDir, segments: readonly string[]): Promise<void> {
    const name = segments.at(-1)!;
    const stat = volume.lstat(name);
    if (stat === null) return;
    // Moving a directory to another parent rewrites its '..' entry, which needs write permission on it.
    if (stat.isDirectory() && (stat.mode & 0o200) === 0) {
      await this.setMode(volume, name, { side: 'volume', segments }, stat.mode & 0o7777, (stat.mode & 0o7777) | 0o200);
    }
    // Our own folders, inside the restore's folder: the server's process cannot reach them.
    const parked = this.openParent({ side: 'displaced', segments }, true);
    try {
      await this.rename(volume, name, parked, { side: 'volume', segments }, { side: 'displaced', segments });
    } finally {
      parked.close();
    }
  }

  private async rename(from: SafeDir, name: string, to: SafeDir, fromPlace: Place, toPlace: Place): Promise<void> {
    await this.operations.rename(from.entryPath(name), to.entryPath(name));
    this.undoSteps.push(() => this.atPlaces(toPlace, fromPlace, (back, forth) => this.operations.rename(back, forth)));
  }

  /** chmod of a folder just seen by lstat as a real directory, through a handle that refuses a link. */
  private async setMode(parent: SafeDir, name: string, place: Place, current: number, wanted: number): Promise<void> {
    if (current === wanted) return;
    await this.chmodEntry(parent, name, wanted);
    this.undoSteps.push(async () => {
      const dir = this.openParent(place, false);
      try {
        await this.chmodEntry(dir, place.segments.at(-1)!, current);
      } finally {
        dir.close();
      }
    });
  }

  private async chmodEntry(parent: SafeDir, name: string, mode: number): Promise<void> {
    const handle = fs.openSync(parent.entryPath(name), O_PATH | O_DIRECTORY | O_NOFOLLOW);
    try {
      // chmod of /proc/self/fd/<O_PATH fd> changes the held folder itself.
      await this.operations.chmod(`/proc/self/fd/${handle}`, mode);
    } finally {
      fs.closeSync(handle);
    }
  }

  /** Runs `work` with the entry paths of two places, their parents walked again from the roots (never through a link). */
  private async atPlaces(from: Place, to: Place, work: (from: string, to: string) => Promise<void>): Promise<void> {
    const fromDir = this.openParent(from, false);
    try {
      const toDir = this.openParent(to, to.side === 'displaced');
      try {
        await work(fromDir.entryPath(from.segments.at(-1)!), toDir.entryPath(to.segments.at(-1)!));
      } finally {
        toDir.close();
      }
    } finally {
      fromDir.close();
    }
  }

  /** The folder holding a place's entry, walked from its side's root; `make`: missing folders are made (displaced only). */
  private openParent(place: Place, make: boolean): SafeDir {
    const root = place.side === 'volume' ? this.volumeDir : place.side === 'displaced' ? this.displacedDir : this.stagedRoot;
    if (make) fs.mkdirSync(root, { recursive: true, mode: 0o700 });
    let dir = SafeDir.open(root);
    try {
      for (const segment of place.segments.slice(0, -1)) {
        if (make && dir.lstat(segment) === null) dir.mkdir(segment, 0o700);
        const next = dir.openDir(segment);
        dir.close();
        dir = next;
      }
      return dir;
    } catch (err) {
      dir.close();
      throw err;
    }
  }
}
