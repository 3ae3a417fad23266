/**
 * Deleting files a client named (SPEC 7): only ever inside the server's
 * volume, never through a link that leads out of it.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { DaemonError } from '../../daemon.js';

/** Deletes paths relative to the volume, with everything below them; a path that is not there is skipped. */
export async function deleteVolumePaths(volumeDir: string, paths: string[]): Promise<void> {
  const volume = await fs.realpath(volumeDir);
  for (const relative of paths) {
    const target = resolveInsideVolume(volume, relative);
    // Never follow a link out of the volume: the parent must really be inside it.
    let parent: string;
    try {
      parent = await fs.realpath(path.dirname(target));
    } catch {
      continue; // nothing there to delete
    }
    if (parent !== volume && !parent.startsWith(volume + path.sep)) {
      throw new DaemonError(`"${relative}" is not inside the server's volume.`);
    }
    await fs.rm(path.join(parent, path.basename(target)), { recursive: true, force: true });
  }
}

/** A volume-relative path as an absolute one; refuses absolute paths, `..` and the volume itself. */
export function resolveInsideVolume(volume: string, relative: string): string {
  const segments = relative.split(/[\\/]+/).filter((s) => s !== '' && s !== '.');
  if (path.isAbsolute(relative) || segments.includes('..') || segments.length === 0) {
    throw new DaemonError(`"${relative}" is not a path inside the server's volume.`);
  }
  return path.join(volume, ...segments);
}
