/**
 * What an instance does with a restore folder whose restore was cut short
 * (docs/RESTORE.md "Crash safety"): no journal → the volume was never touched,
 * the staged tree goes (rolled back); a journal → the move had begun and is run
 * to its end (restored). Either way the folder is then removed, journal first.
 */
import { removeTree } from '../archive/remove-tree.js';
import { lstatOrNull } from '../archive/lstat-or-null.js';
import { finishMove } from './move-into-volume.js';
import { dropJournal, readJournal, type RestoreFolder } from './restore-folder.js';
import path from 'node:path';

export type RecoveredRestore = 'restored' | 'rolled-back';

/**
 * Brings the volume to exactly the old or exactly the restored tree. Leaves the
 * folder in place (the caller records the outcome, then calls `discardFolder`):
 * a crash before the outcome is recorded then reads the same journal again.
 */
export async function settleRestoreFolder(folder: RestoreFolder): Promise<RecoveredRestore> {
  if ((await lstatOrNull(folder.root)) === null) return 'rolled-back';
  const journal = await readJournal(folder);
  if (journal === null) {
    await removeTree(folder.root);
    return 'rolled-back';
  }
  await finishMove(folder, path.join(path.dirname(folder.root), journal.volume), journal);
  return 'restored';
}

/** Removes a restore's folder once its outcome is recorded (or it has none): the journal first. */
export async function discardFolder(folder: RestoreFolder): Promise<void> {
  if ((await lstatOrNull(folder.root)) === null) return;
  await dropJournal(folder);
  await removeTree(folder.root);
}
