import fs from 'node:fs/promises';
import path from 'node:path';
import { lstatOrNull } from './lstat-or-null.js';

/** Removes a tree without following symlinks, even one holding folders its owner made read-only. */
export async function removeTree(target: string): Promise<void> {
  try {
    await fs.rm(target, { recursive: true, force: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM' && code !== 'ENOTEMPTY') throw err;
    await removeStubbornTree(target);
  }
}

async function removeStubbornTree(target: string): Promise<void> {
  const stat = await lstatOrNull(target);
  if (stat === null) return;
  if (!stat.isDirectory()) return fs.unlink(target);
  if ((stat.mode & 0o700) !== 0o700) await fs.chmod(target, (stat.mode & 0o7777) | 0o700);
  for (const name of await fs.readdir(target)) await removeStubbornTree(path.join(target, name));
  await fs.rmdir(target);
}
