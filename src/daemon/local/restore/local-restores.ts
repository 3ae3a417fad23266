/**
 * Restoring a backup onto a server's volume on this node (docs/reference/backups-and-restores.md#restoring, docs/reference/backups-and-restores.md#durability), and
 * finishing or undoing a restore an instance that died left (docs/RESTORE.md).
 * LocalDaemon's restore methods; the volume's state comes in as callbacks.
 */
import type { DaemonServer, ServerLimits } from '../../daemon.js';
import { lstatOrNull } from '../archive/lstat-or-null.js';
import { restoreArchive } from '../archive/restore.js';
import { restoreByteBound, restoreEntryBound } from '../volume/restore-bounds.js';
import type { VolumeUsage } from '../volume/disk-usage.js';
import { discardFolder, settleRestoreFolder } from './recover-restore.js';
import { listRestoreFolders, restoreFolder, type RestoreFolder } from './restore-folder.js';

export interface LocalRestoresDeps {
  readonly volumesDir: string;
  volumeDir(serverUuid: string): string;
  backupPath(backupUuid: string): string;
  prepareVolume(server: DaemonServer): Promise<void>;
  /** Stops the server when it runs here (a restore never writes under a running server). */
  stopIfRunning(server: DaemonServer): Promise<void>;
  killIfRunning(server: DaemonServer): Promise<void>;
  volumeUsage(server: DaemonServer): Promise<VolumeUsage>;
  volumeOwner(server: DaemonServer): { uid: number; gid: number } | undefined;
  /** The volume changed: kept measurements of it are stale. */
  volumeChanged(server: DaemonServer): void;
}

export class LocalRestores {
  constructor(private readonly deps: LocalRestoresDeps) {}

  async restore(
    server: DaemonServer,
    backup: { uuid: string; sha1: string | null },
    options: { truncate: boolean; restoreId?: string; maxEntries?: number },
  ): Promise<void> {
    const { deps } = this;
    // A running server is stopped first (docs/reference/backups-and-restores.md#restoring).
    await deps.stopIfRunning(server);
    await deps.prepareVolume(server);
    const used = () => deps.volumeUsage(server);
    const limits: ServerLimits | undefined = server.limits;
    const maxBytes = await restoreByteBound(limits, options.truncate, used);
    const maxEntries = await restoreEntryBound(limits, options.truncate, options.maxEntries, used);
    const owner = deps.volumeOwner(server);
    try {
      await restoreArchive({
        archivePath: deps.backupPath(backup.uuid),
        volumeDir: deps.volumeDir(server.uuid),
        expectedSha1: backup.sha1,
        truncate: options.truncate,
        limits: {
          ...(maxEntries !== undefined ? { maxEntries } : {}),
          ...(maxBytes !== undefined ? { maxBytes } : {}),
        },
        ...(options.restoreId !== undefined ? { folder: this.folder(options.restoreId) } : {}),
        ...(owner ? { owner } : {}),
      });
    } finally {
      // The volume changed (or may have, if the move failed halfway): a kept figure would be stale.
      deps.volumeChanged(server);
    }
  }

  async recover(server: DaemonServer, restoreId: string): Promise<'restored' | 'rolled-back' | 'not-here'> {
    const folder = this.folder(restoreId);
    const [volume, progress] = await Promise.all([lstatOrNull(this.deps.volumeDir(server.uuid)), lstatOrNull(folder.root)]);
    if (volume === null && progress === null) return 'not-here';
    // A server process that survived its instance (reaped at start, but not one on another node) must not write meanwhile.
    await this.deps.killIfRunning(server);
    return settleRestoreFolder(folder);
  }

  async discard(restoreId: string): Promise<void> {
    // Settled first: a journal still there (a forced clear mid-move) is run to its end, never dropped halfway.
    const folder = this.folder(restoreId);
    await settleRestoreFolder(folder);
    await discardFolder(folder);
  }

  list(): Promise<string[]> {
    return listRestoreFolders(this.deps.volumesDir);
  }

  private folder(restoreId: string): RestoreFolder {
    // The id comes from our own row; refuse anything that could name another folder.
    if (!/^[A-Za-z0-9-]+$/.test(restoreId)) throw new Error(`invalid restore id ${JSON.stringify(restoreId)}`);
    return restoreFolder(this.deps.volumesDir, restoreId);
  }
}
