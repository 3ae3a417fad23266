/**
 * A directory held open by descriptor, the one mechanism every operation on a
 * volume's files goes through so that a server's process cannot redirect it
 * out of the volume by swapping a folder for a symlink between a check and a
 * use (docs/reference/backups-and-restores.md#durability, docs/RESTORE.md "Safe operations on a volume").
 *
 * Node has no openat(2), but Linux's `/proc/self/fd/<fd>/<name>` resolves
 * `<fd>` as the very directory the descriptor holds (not by re-reading a
 * path), and looks up only `<name>` inside it. Each operation below names one
 * entry of the held directory and uses a call that does not follow a link in
 * that last position (lstat, unlink, rmdir, rename, mkdir) or opens it with
 * O_NOFOLLOW. A walk goes down by opening each child from its held parent, so
 * no path is ever re-resolved from the volume's root.
 *
 * A SIGKILL at any instant leaves only what the single system call it
 * interrupted had done: descriptors close with the process.
 */
import fs from 'node:fs';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = fs.constants;
const OPEN_DIR = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
/** Linux's O_PATH (not in Node's constants): a handle on an entry that needs no read permission on it. */
const O_PATH = 0o10000000;

const MAX_REMOVAL_ATTEMPTS = 100;

let supported: boolean | undefined;

/**
 * Throws unless `/proc/self/fd` resolves descriptors as directories (Linux
 * with /proc mounted). Without it there is no way to act relative to a held
 * directory from Node, so volume operations are refused rather than done in a
 * way a server's process could redirect; containment (docs/reference/containment.md) needs Linux too.
 */
export function assertSafeDirSupported(): void {
  if (supported === undefined) {
    try {
      const fd = fs.openSync('/', OPEN_DIR);
      try {
        supported = fs.statSync(`/proc/self/fd/${fd}`).isDirectory();
      } finally {
        fs.closeSync(fd);
      }
    } catch {
      supported = false;
    }
  }
  if (!supported) {
    throw new Error(
      'safe file operations on a volume need Linux with /proc mounted (/proc/self/fd); Quetzal does not run volume operations elsewhere',
    );
  }
}

/** Throws unless `name` is exactly one path segment. */
function checkEntryName(name: string): void {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw new Error(`"${name}" is not a single entry name`);
  }
}

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

function isMissing(err: unknown): boolean {
  return errnoCode(err) === 'ENOENT';
}

function nullIfMissing(err: unknown): null {
  if (isMissing(err)) return null;
  throw err;
}

/** A Node callback call as a promise. */
function call<T>(start: (done: (err: NodeJS.ErrnoException | null, value?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => start((err, value) => (err ? reject(err) : resolve(value as T))));
}

/** A directory held open by descriptor; every operation names one entry inside it and never follows a link there. */
export class SafeDir {
  private open_ = true;

  private constructor(
    /** the descriptor holding the directory */
    readonly fd: number,
    /** a label for error messages only: never resolved again */
    readonly label: string,
  ) {}

  /**
   * Opens an absolute path as the root of a walk. Links in the path above
   * the last segment are followed (the service's own folders), the last one
   * must be a real directory: a volume root that is a link is refused.
   */
  static open(absolutePath: string): SafeDir {
    assertSafeDirSupported();
    try {
      return new SafeDir(fs.openSync(absolutePath, OPEN_DIR), absolutePath);
    } catch (err) {
      throw describe(err, absolutePath);
    }
  }

  /** `/proc/self/fd/<fd>`: the held directory itself, for APIs that need a path. */
  get path(): string {
    this.assertOpen();
    return `/proc/self/fd/${this.fd}`;
  }

  /** `/proc/self/fd/<fd>/<name>`: one entry of the held directory, for APIs that need a path. */
  entryPath(name: string): string {
    checkEntryName(name);
    return `${this.path}/${name}`;
  }

  /** A child folder, held open; throws (ENOTDIR; ELOOP on some kernels) if it is a link or not a folder, ENOENT if absent. */
  openDir(name: string): SafeDir {
    try {
      return new SafeDir(fs.openSync(this.entryPath(name), OPEN_DIR), `${this.label}/${name}`);
    } catch (err) {
      throw describe(err, `${this.label}/${name}`);
    }
  }

  /** A child folder, or null when nothing by that name is there; throws if it is a link or not a folder. */
  tryOpenDir(name: string): SafeDir | null {
    try {
      return this.openDir(name);
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  /** The same as openDir without blocking the event loop, for walks over large trees. */
  async openDirAsync(name: string): Promise<SafeDir> {
    const entry = this.entryPath(name);
    const fd = await new Promise<number>((resolve, reject) => {
      fs.open(entry, OPEN_DIR, (err, opened) => (err ? reject(describe(err, `${this.label}/${name}`)) : resolve(opened)));
    });
    return new SafeDir(fd, `${this.label}/${name}`);
  }

  /** The entry's own lstat (a link is reported as a link), or null when absent. */
  lstat(name: string): fs.Stats | null {
    try {
      return fs.lstatSync(this.entryPath(name));
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  /** The held directory's own stat. */
  stat(): fs.Stats {
    this.assertOpen();
    return fs.fstatSync(this.fd);
  }

  /** The held directory's entries with their types (as readdir gives them), in no particular order. */
  list(): fs.Dirent[] {
    return fs.readdirSync(this.path, { withFileTypes: true });
  }

  /** The same as list without blocking the event loop. */
  listAsync(): Promise<fs.Dirent[]> {
    return fs.promises.readdir(this.path, { withFileTypes: true });
  }

  /** open(2) of one entry with O_NOFOLLOW always added: a link there fails with ELOOP. Returns the descriptor. */
  openFile(name: string, flags: number, mode?: number): number {
    return fs.openSync(this.entryPath(name), flags | O_NOFOLLOW, mode);
  }

  /** The same as openFile without blocking the event loop. */
  openFileAsync(name: string, flags: number, mode?: number): Promise<number> {
    const entry = this.entryPath(name);
    return new Promise((resolve, reject) => {
      fs.open(entry, flags | O_NOFOLLOW, mode, (err, fd) => (err ? reject(err) : resolve(fd)));
    });
  }

  /** A link's target as stored (never resolved). */
  readlink(name: string): string {
    return fs.readlinkSync(this.entryPath(name));
  }

  /** Creates a symlink named `name` holding `target` as text. */
  symlink(target: string, name: string): void {
    fs.symlinkSync(target, this.entryPath(name));
  }

  /** mkdir(2): fails with EEXIST when anything (a link included) is there, never creates through a link. */
  mkdir(name: string, mode: number): void {
    fs.mkdirSync(this.entryPath(name), { mode });
  }

  /** renameat(2): moves the entry itself (a link stays a link) into `to` under `toName`, replacing what rename(2) replaces. */
  rename(name: string, to: SafeDir, toName: string): void {
    fs.renameSync(this.entryPath(name), to.entryPath(toName));
  }

  /** Removes a file or link (the link itself, never its target). */
  unlink(name: string): void {
    fs.unlinkSync(this.entryPath(name));
  }

  /** Removes an empty folder; fails with ENOTDIR on a link. */
  rmdir(name: string): void {
    fs.rmdirSync(this.entryPath(name));
  }

  /**
   * Removes the entry and, if it is a real folder, everything below it,
   * depth-first, each folder opened from its held parent: a link anywhere is
   * unlinked itself, never crossed. Absent is not an error. Folders made
   * unwritable or unreadable by their owner are opened up first (through the
   * descriptor, so the change cannot land on a swapped-in link's target).
   * A SIGKILL part way leaves a partly removed subtree of the entry, nothing
   * outside it touched.
   */
  async removeTreeAsync(name: string): Promise<void> {
    // Bounded: a process that keeps refilling or swapping the folder cannot hold the removal forever.
    for (let attempt = 0; attempt < MAX_REMOVAL_ATTEMPTS; attempt++) {
      const stat = await call<fs.Stats>((done) => fs.lstat(this.entryPath(name), done)).catch(nullIfMissing);
      if (stat === null) return;
      if (!stat.isDirectory()) {
        try {
          await call<void>((done) => fs.unlink(this.entryPath(name), done));
          return;
        } catch (err) {
          // Replaced by a folder since the lstat: look again. Gone: done.
          if (errnoCode(err) === 'EISDIR' || errnoCode(err) === 'EPERM') continue;
          if (isMissing(err)) return;
          throw err;
        }
      }
      const child = this.openForRemoval(name);
      if (child === null) continue; // swapped for something else since the lstat: look again
      try {
        for (const entry of await child.listAsync()) await child.removeTreeAsync(entry.name);
      } finally {
        child.close();
      }
      try {
        await call<void>((done) => fs.rmdir(this.entryPath(name), done));
        return;
      } catch (err) {
        // ENOTDIR: a link took the folder's place; ENOTEMPTY: something was added meanwhile. Look again.
        if (errnoCode(err) === 'ENOTDIR' || errnoCode(err) === 'ENOTEMPTY') continue;
        if (isMissing(err)) return;
        throw err;
      }
    }
    throw new Error(`${this.label}/${name} kept changing while it was being removed`);
  }

  /**
   * Stops holding the directory. Idempotent. Not while an async call on it is
   * pending: its path names the descriptor's number, which the next open may
   * reuse for another folder.
   */
  close(): void {
    if (!this.open_) return;
    this.open_ = false;
    fs.closeSync(this.fd);
  }

  /** A child folder opened for removal, with its owner's rwx granted; null if it is no longer a folder. */
  private openForRemoval(name: string): SafeDir | null {
    let child: SafeDir;
    try {
      child = this.openDir(name);
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'ENOTDIR' || code === 'ELOOP' || code === 'ENOENT') return null;
      if (code !== 'EACCES') throw err;
      this.grantOwner(name);
      return this.openForRemoval(name);
    }
    const mode = child.stat().mode;
    if ((mode & 0o700) !== 0o700) fs.fchmodSync(child.fd, (mode & 0o7777) | 0o700);
    return child;
  }

  /** Adds the owner's rwx to a folder that cannot even be opened for reading, without following a link. */
  private grantOwner(name: string): void {
    // O_PATH needs no permission on the folder; O_NOFOLLOW|O_DIRECTORY refuse a link.
    const handle = fs.openSync(this.entryPath(name), O_PATH | O_DIRECTORY | O_NOFOLLOW);
    try {
      const mode = fs.fstatSync(handle).mode;
      if ((mode & 0o700) === 0o700)
        throw Object.assign(new Error(`permission denied: ${this.label}/${name}`), { code: 'EACCES' });
      // chmod of /proc/self/fd/<O_PATH fd> changes the held folder itself.
      fs.chmodSync(`/proc/self/fd/${handle}`, (mode & 0o7777) | 0o700);
    } finally {
      fs.closeSync(handle);
    }
  }

  private assertOpen(): void {
    if (!this.open_) throw new Error(`${this.label} was already closed`);
  }
}

/** An fs error re-worded with the path it concerned (the /proc/self/fd path means nothing to a reader), code kept. */
function describe(err: unknown, label: string): Error {
  const code = errnoCode(err);
  const why =
    // Linux answers ENOTDIR, not ELOOP, when O_DIRECTORY|O_NOFOLLOW meets a symlink.
    code === 'ELOOP' || code === 'ENOTDIR'
      ? 'is not a folder (a symlink or a file), refused'
      : code === 'ENOENT'
        ? 'does not exist'
        : (err as Error).message;
  return Object.assign(new Error(code && why !== (err as Error).message ? `${label} ${why} (${code})` : `${label}: ${why}`), {
    code,
    cause: err,
  });
}
