/**
 * Deleting files a client named (docs/reference/schedules.md#running-schedules): only ever inside the server's
 * volume, never through a link, even one a server's process swaps in while
 * the deletion runs (docs/reference/backups-and-restores.md#durability). Each path is walked segment by segment from the
 * volume's root, each folder opened by descriptor from its held parent with
 * O_NOFOLLOW (SafeDir): a link on the way is refused, a final entry that is a
 * link is removed itself. A SIGKILL part way leaves a partly removed subtree
 * of what was asked, nothing else touched.
 */
import path from 'node:path';
import { DaemonError } from '../../daemon.js';
import { SafeDir } from './safe-dir.js';

/**
 * Deletes paths relative to the volume, with everything below them; a path
 * that is not there (or runs through a file) is skipped; one that runs
 * through a symlink is refused with a DaemonError (paths before it are
 * already deleted, as before).
 */
export async function deleteVolumePaths(volumeDir: string, paths: string[]): Promise<void> {
  const volume = SafeDir.open(volumeDir);
  try {
    for (const relative of paths) {
      const segments = volumeSegments(relative);
      const parent = openParent(volume, segments, relative);
      if (parent === null) continue; // nothing there to delete
      try {
        await parent.removeTreeAsync(segments[segments.length - 1]!);
      } finally {
        if (parent !== volume) parent.close();
      }
    }
  } finally {
    volume.close();
  }
}

/** The held folder holding the path's last segment, or null when a folder on the way is absent or a file. */
function openParent(volume: SafeDir, segments: string[], relative: string): SafeDir | null {
  let dir = volume;
  try {
    for (const segment of segments.slice(0, -1)) {
      let next: SafeDir | null;
      try {
        next = dir.tryOpenDir(segment);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOTDIR' && (err as NodeJS.ErrnoException).code !== 'ELOOP') throw err;
        // Not a folder: a link (refused, whatever it points to) or a file (nothing below it to delete).
        if (dir.lstat(segment)?.isSymbolicLink()) {
          throw new DaemonError(`"${relative}" passes through a symlink; it is not deleted.`);
        }
        next = null;
      }
      if (dir !== volume) dir.close();
      if (next === null) return null;
      dir = next;
    }
    return dir;
  } catch (err) {
    if (dir !== volume) dir.close();
    throw err;
  }
}

/** The segments of a volume-relative path; refuses absolute paths, `..` and the volume itself. */
function volumeSegments(relative: string): string[] {
  const segments = relative.split(/[\\/]+/).filter((s) => s !== '' && s !== '.');
  if (path.isAbsolute(relative) || segments.includes('..') || segments.length === 0) {
    throw new DaemonError(`"${relative}" is not a path inside the server's volume.`);
  }
  return segments;
}

/** A volume-relative path as an absolute one; refuses absolute paths, `..` and the volume itself. */
export function resolveInsideVolume(volume: string, relative: string): string {
  return path.join(volume, ...volumeSegments(relative));
}
