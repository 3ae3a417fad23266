import fs from 'node:fs';
import path from 'node:path';
import { SafeDir } from '../volume/safe-dir.js';

/**
 * Removes a tree without following symlinks, even one holding folders its
 * owner made read-only: the parent of `target` is held by descriptor and the
 * tree is removed depth-first through SafeDir, so a link planted anywhere in
 * it (by a server's process) is unlinked, never crossed. Absent is not an
 * error. A SIGKILL part way leaves a partly removed subtree of `target`.
 */
export async function removeTree(target: string): Promise<void> {
  let parent: SafeDir;
  try {
    // The parent is the service's own folder (links the operator made in its path are theirs to make).
    parent = SafeDir.open(fs.realpathSync(path.dirname(path.resolve(target))));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    await parent.removeTreeAsync(path.basename(path.resolve(target)));
  } finally {
    parent.close();
  }
}
