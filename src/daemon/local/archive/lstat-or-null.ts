import type { Stats } from 'node:fs';
import fs from 'node:fs/promises';

/** A path's own lstat, or null when nothing is there. */
export async function lstatOrNull(target: string): Promise<Stats | null> {
  try {
    return await fs.lstat(target);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
