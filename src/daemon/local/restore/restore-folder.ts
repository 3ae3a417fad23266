/**
 * A restore's own folder beside the volumes, `volumes/.restore-<id>/`
 * (docs/RESTORE.md "Crash safety"): `staged/` (the extracted tree),
 * `displaced/` (what the move pushed out of the volume) and `journal.json`
 * (how far the move got). Same file system as the volume, so every move is a
 * rename; outside every volume, so no server's process can reach it.
 */
import fs from 'node:fs/promises';
import path from 'node:path';

export const RESTORE_FOLDER_PREFIX = '.restore-';

export interface RestoreFolder {
  readonly root: string;
  readonly staged: string;
  readonly displaced: string;
  readonly journal: string;
}

export function restoreFolder(volumesDir: string, restoreId: string): RestoreFolder {
  const root = path.join(volumesDir, `${RESTORE_FOLDER_PREFIX}${restoreId}`);
  return {
    root,
    staged: path.join(root, 'staged'),
    displaced: path.join(root, 'displaced'),
    journal: path.join(root, 'journal.json'),
  };
}

/** The ids of the restore folders under `volumesDir` (whatever follows the prefix). */
export async function listRestoreFolders(volumesDir: string): Promise<string[]> {
  const names = await fs.readdir(volumesDir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [] as string[];
    throw err;
  });
  return names.filter((n) => n.startsWith(RESTORE_FOLDER_PREFIX)).map((n) => n.slice(RESTORE_FOLDER_PREFIX.length));
}

/**
 * What the journal says. No journal: the move has not begun, and the volume is
 * untouched. `emptying` (truncate only): the volume's entries are being moved
 * to `displaced/`; nothing staged is in the volume yet. `filling`: the volume
 * holds no old entry that must go (truncate) or the merge has begun; staged
 * entries are being moved in.
 */
export type MovePhase = 'emptying' | 'filling';

export interface RestoreJournal {
  version: 1;
  /** The volume's folder name (the server's UUID), beside this restore's folder. */
  volume: string;
  truncate: boolean;
  phase: MovePhase;
}

/** Durably replaces the journal: temporary file, fsync, rename, fsync of the folder. */
export async function writeJournal(folder: RestoreFolder, journal: RestoreJournal): Promise<void> {
  const temporary = `${folder.journal}.tmp`;
  const handle = await fs.open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(JSON.stringify(journal));
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(temporary, folder.journal);
  await fsyncDirectory(folder.root);
}

/** The journal, or null when there is none (a half-written temporary file does not count). */
export async function readJournal(folder: RestoreFolder): Promise<RestoreJournal | null> {
  let text: string;
  try {
    text = await fs.readFile(folder.journal, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const journal = JSON.parse(text) as Partial<RestoreJournal>;
  if (
    journal.version !== 1 ||
    typeof journal.volume !== 'string' ||
    (journal.phase !== 'emptying' && journal.phase !== 'filling')
  ) {
    throw new Error(`unreadable restore journal ${folder.journal}`);
  }
  return { version: 1, volume: journal.volume, truncate: journal.truncate === true, phase: journal.phase };
}

/** Removes the journal first, durably: a crash while the rest is removed must not be read as a move to finish. */
export async function dropJournal(folder: RestoreFolder): Promise<void> {
  await fs.rm(folder.journal, { force: true });
  await fsyncDirectory(folder.root).catch(() => undefined);
}

export async function fsyncDirectory(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
