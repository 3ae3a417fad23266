/**
 * Giving a tree to a server's uid (docs/reference/containment.md): a confined server runs as a uid
 * of its own (SERVER_UID_RANGE) and must be able to change its own files,
 * including files the service wrote (a restore), files from before
 * containment and files of the shared SERVER_UID from before per-server uids.
 *
 * Descriptor-relative (safe-dir.ts): each entry's owner is changed through
 * its held parent folder with lchown, so a link is given away itself and
 * never followed, and a folder swapped for a link mid-walk is not entered. A
 * SIGKILL part way leaves some entries changed and some not; running it again
 * finishes the job.
 */
import fs from 'node:fs';
import { SafeDir } from './safe-dir.js';

const lchown = (file: string, uid: number, gid: number) =>
  new Promise<void>((resolve, reject) => fs.lchown(file, uid, gid, (err) => (err ? reject(err) : resolve())));

/**
 * Changes the owner of everything below `root`, then of `root` itself;
 * returns how many entries were changed. The root last: `ownedBy(root)` then
 * means the whole tree was given (a SIGKILL part way leaves the root with its
 * old owner, so the next prepare runs it again).
 */
export async function chownTree(root: string, uid: number, gid: number): Promise<number> {
  const dir = SafeDir.open(root);
  try {
    const below = await chownBelow(dir, uid, gid);
    fs.fchownSync(dir.fd, uid, gid);
    return below + 1;
  } finally {
    dir.close();
  }
}

/** Whether `dir` (a real folder) belongs to `uid` already: chownTree gives the root last. */
export function ownedBy(dir: string, uid: number): boolean {
  return fs.lstatSync(dir).uid === uid;
}

async function chownBelow(dir: SafeDir, uid: number, gid: number): Promise<number> {
  let changed = 0;
  for (const entry of await dir.listAsync()) {
    try {
      await lchown(dir.entryPath(entry.name), uid, gid);
      changed++;
    } catch (err) {
      if (isMissing(err)) continue; // removed meanwhile
      throw err;
    }
    if (!entry.isDirectory()) continue;
    let child: SafeDir;
    try {
      child = await dir.openDirAsync(entry.name);
    } catch (err) {
      // Removed, or swapped for a link or a file since the listing: nothing to walk into.
      if (isMissing(err) || isNotAFolder(err)) continue;
      throw err;
    }
    try {
      changed += await chownBelow(child, uid, gid);
    } finally {
      child.close();
    }
  }
  return changed;
}

function isMissing(err: unknown): boolean {
  return (err as NodeJS.ErrnoException).code === 'ENOENT';
}

function isNotAFolder(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOTDIR' || code === 'ELOOP';
}
