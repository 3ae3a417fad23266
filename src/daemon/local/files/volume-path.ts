/**
 * How every file operation finds its entry (docs/reference/files-and-sftp.md): a path relative to the
 * server's volume (a leading `/` is the volume's root) is split into
 * segments, refused when it names `..`, holds a NUL byte or is empty, and
 * walked descriptor-relative through SafeDir: each folder opened from its
 * held parent with O_NOFOLLOW, so a link anywhere on the way is refused and
 * no path resolves outside the volume, even with a folder swapped for a link
 * while the walk runs. The last segment is left to the operation, which acts
 * on it with a call that does not follow a link.
 */
import fs from 'node:fs';
import { VolumeFileError } from '../../daemon.js';
import { SafeDir } from '../volume/safe-dir.js';
import { errnoCode, volumeFileError } from './file-errors.js';
import { giveToOwner, type Owner } from './ownership.js';

/** Longest path accepted: Linux's PATH_MAX. */
const MAX_PATH = 4096;
/** Longest entry name: Linux's NAME_MAX. */
const MAX_NAME = 255;

/** The segments of a volume path ('' and '.' dropped); `[]` is the volume's root, refused unless `allowRoot`. */
export function volumeSegments(relative: string, options: { allowRoot?: boolean } = {}): string[] {
  if (typeof relative !== 'string') throw new VolumeFileError('invalid-path', 'A path must be a string.');
  if (relative.includes('\0')) throw new VolumeFileError('invalid-path', 'A path must not contain a NUL byte.');
  if (relative.length > MAX_PATH) throw new VolumeFileError('invalid-path', `A path must be at most ${MAX_PATH} characters.`);
  const segments = relative.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (segments.includes('..')) throw new VolumeFileError('invalid-path', `"${relative}" leaves the server's folder ("..").`);
  const long = segments.find((segment) => Buffer.byteLength(segment) > MAX_NAME);
  if (long !== undefined) throw new VolumeFileError('invalid-path', `A name in "${relative}" is longer than ${MAX_NAME} bytes.`);
  if (segments.length === 0 && !options.allowRoot) {
    throw new VolumeFileError('invalid-path', `"${relative}" names the server's folder itself, not an entry in it.`);
  }
  return segments;
}

/** One name inside a folder (a compress list, a new name): a single segment. */
export function entryName(name: string): string {
  const segments = volumeSegments(name);
  if (segments.length !== 1) throw new VolumeFileError('invalid-path', `"${name}" is not a single name.`);
  return segments[0]!;
}

/** Opens the volume's root; runs `work` with it held, closing it after. */
export async function withVolume<T>(volumeDir: string, work: (volume: SafeDir) => Promise<T>): Promise<T> {
  let volume: SafeDir;
  try {
    volume = SafeDir.open(volumeDir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') throw new VolumeFileError('not-found', "The server's folder does not exist yet.");
    throw err;
  }
  try {
    return await work(volume);
  } finally {
    volume.close();
  }
}

/** How a walk makes missing folders: owned by the server's uid, 0755. */
export interface MakeFolders {
  readonly owner: Owner;
  /** Filled with the path (segments) of each folder made, shallowest first: what to remove if the work fails. */
  readonly made?: string[][];
}

/**
 * The folder `segments` name, walked from `volume` and held open (the caller
 * closes it unless it is `volume` itself). A link on the way: `invalid-path`;
 * a file: `not-a-directory`; missing: `not-found`, or made when `make` says so.
 */
export function openFolder(volume: SafeDir, segments: readonly string[], label: string, make?: MakeFolders): SafeDir {
  let dir = volume;
  try {
    for (const [index, segment] of segments.entries()) {
      const next = openChild(dir, segment, label, make, segments.slice(0, index + 1));
      if (dir !== volume) dir.close();
      dir = next;
    }
    return dir;
  } catch (err) {
    if (dir !== volume) dir.close();
    throw err;
  }
}

/** The folder holding the last segment (`segments` non-empty). */
export function openParent(volume: SafeDir, segments: readonly string[], label: string, make?: MakeFolders): SafeDir {
  return openFolder(volume, segments.slice(0, -1), label, make);
}

/** Closes a folder a walk opened, never the volume root the caller holds. */
export function release(dir: SafeDir, volume: SafeDir): void {
  if (dir !== volume) dir.close();
}

function openChild(dir: SafeDir, segment: string, label: string, make: MakeFolders | undefined, here: string[]): SafeDir {
  try {
    return dir.openDir(segment);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT' && make) {
      if (makeFolder(dir, segment, make.owner, 0o755, label)) make.made?.push(here);
      return openChild(dir, segment, label, undefined, here);
    }
    throw notAFolderError(dir, segment, label, err);
  }
}

/** Why `segment` of `dir` could not be opened as a folder, as the caller's error. */
export function notAFolderError(dir: SafeDir, segment: string, label: string, err: unknown): Error {
  const code = errnoCode(err);
  if (code === 'ENOTDIR' || code === 'ELOOP') {
    const stat = dir.lstat(segment);
    if (stat?.isSymbolicLink()) return new VolumeFileError('invalid-path', `"${label}" passes through a symlink; refused.`);
    if (stat === null) return new VolumeFileError('not-found', `"${label}" does not exist.`);
    return new VolumeFileError('not-a-directory', `"${label}" passes through "${segment}", which is not a folder.`);
  }
  return volumeFileError(err, label);
}

/**
 * mkdir of one entry (never through a link: mkdir does not follow one in
 * the last position); true when this call made it. Then given to the server's uid through a descriptor
 * opened with O_NOFOLLOW, so a link swapped in meanwhile is refused, not chowned.
 */
export function makeFolder(dir: SafeDir, name: string, owner: Owner, mode: number, label: string): boolean {
  try {
    dir.mkdir(name, mode);
  } catch (err) {
    if (errnoCode(err) === 'EEXIST') return false; // made meanwhile (another request): opened by the caller as any folder
    throw volumeFileError(err, label);
  }
  let made: SafeDir;
  try {
    made = dir.openDir(name);
  } catch (err) {
    throw notAFolderError(dir, name, label, err);
  }
  try {
    // mkdir's mode passes through the umask: the wanted bits exactly.
    fs.fchmodSync(made.fd, mode);
    giveToOwner(made.fd, owner);
  } finally {
    made.close();
  }
  return true;
}

/**
 * Removes the folders a failed operation made (deepest first), each only if
 * it is still an empty folder: rmdir refuses a link and a folder something
 * was put into meanwhile, which then stays.
 */
export function removeMadeFolders(volume: SafeDir, made: readonly string[][]): void {
  for (const segments of [...made].reverse()) {
    try {
      const parent = openFolder(volume, segments.slice(0, -1), segments.join('/'));
      try {
        parent.rmdir(segments.at(-1)!);
      } finally {
        release(parent, volume);
      }
    } catch {
      // Not empty, gone, or no longer a folder: left as it is.
    }
  }
}
