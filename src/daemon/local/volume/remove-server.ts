import fs from 'node:fs';
import path from 'node:path';
import { removeTree } from '../archive/remove-tree.js';

/** A volume being removed is first renamed to this prefix + its uuid beside the others. */
export const REMOVING_FOLDER_PREFIX = '.removing-';

/**
 * Removes what the node keeps for a deleted server (server:delete): its
 * volume, and every log named after it in `logsDir` (console log, its rotated
 * copy, the install log). The volume is first renamed to
 * `.removing-<uuid>` (atomic), then removed.
 *
 * A SIGKILL at any instant leaves: before the rename, the volume whole (run
 * server:delete again with the full UUID: with no row left it finishes this);
 * after it, a partly removed `.removing-<uuid>` folder that the next daemon
 * start sweeps (sweepRemovedVolumes), and logs that the next server:delete of
 * that UUID removes. Never anything outside these folders.
 */
export async function removeServerFiles(dirs: { volumes: string; logs: string }, serverUuid: string): Promise<void> {
  if (!/^[0-9a-f-]{36}$/i.test(serverUuid)) throw new Error(`not a server uuid: ${serverUuid}`);
  const volume = path.join(dirs.volumes, serverUuid);
  const removing = path.join(dirs.volumes, `${REMOVING_FOLDER_PREFIX}${serverUuid}`);
  try {
    await fs.promises.rename(volume, removing);
  } catch (err) {
    // No volume (never made, or renamed by a removal cut short): what is left is removed below.
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await removeTree(removing);
  const logs = await fs.promises.readdir(dirs.logs).catch(() => [] as string[]);
  await Promise.all(logs.filter((name) => name.startsWith(serverUuid)).map((name) => removeTree(path.join(dirs.logs, name))));
}

/** Whether the node still keeps anything of that server (a volume or a log): what server:delete of a row-less UUID finishes. */
export async function hasServerFiles(dirs: { volumes: string; logs: string }, serverUuid: string): Promise<boolean> {
  const exists = (p: string) =>
    fs.promises.lstat(p).then(
      () => true,
      () => false,
    );
  if (
    (await exists(path.join(dirs.volumes, serverUuid))) ||
    (await exists(path.join(dirs.volumes, `${REMOVING_FOLDER_PREFIX}${serverUuid}`)))
  ) {
    return true;
  }
  const logs = await fs.promises.readdir(dirs.logs).catch(() => [] as string[]);
  return logs.some((name) => name.startsWith(serverUuid));
}

/** At daemon start: finishes the removals a crash cut short (`.removing-*` folders). Returns how many it removed. */
export async function sweepRemovedVolumes(volumesDir: string): Promise<number> {
  const names = await fs.promises.readdir(volumesDir).catch(() => [] as string[]);
  const stale = names.filter((name) => name.startsWith(REMOVING_FOLDER_PREFIX));
  for (const name of stale) await removeTree(path.join(volumesDir, name));
  return stale.length;
}
