/**
 * A server's files on this machine (SPEC 15), every operation descriptor-relative
 * through SafeDir (../volume/safe-dir.ts). Skeleton: issue 19's files layer fills it in.
 */
import type { Readable } from 'node:stream';
import type { DaemonFiles, DaemonServer, OpenFlags, VolumeEntry, VolumeFileHandle } from '../../daemon.js';

/** What the files layer needs from the daemon that owns the volumes. */
export interface LocalFilesHost {
  volumeDir(serverUuid: string): string;
  backupPath(backupUuid: string): string;
  /** The uid (and gid) the server's files belong to; undefined when unconfined (the service's own user). */
  ownerOf(server: DaemonServer): { uid: number; gid: number } | undefined;
  /** Bytes the volume uses now (a fresh measurement). */
  diskUsage(server: DaemonServer): Promise<number>;
}

export class LocalFiles implements DaemonFiles {
  constructor(private readonly host: LocalFilesHost) {}

  private notYet(): never {
    void this.host;
    throw new Error('not implemented yet');
  }
  async list(_server: DaemonServer, _directory: string): Promise<VolumeEntry[]> {
    return this.notYet();
  }
  async stat(_server: DaemonServer, _file: string): Promise<VolumeEntry> {
    return this.notYet();
  }
  async readFile(_server: DaemonServer, _file: string, _maxBytes: number): Promise<Buffer> {
    return this.notYet();
  }
  async openRead(_server: DaemonServer, _file: string): Promise<{ entry: VolumeEntry; stream: Readable }> {
    return this.notYet();
  }
  async writeFile(_server: DaemonServer, _file: string, _content: Readable | Buffer): Promise<VolumeEntry> {
    return this.notYet();
  }
  async createFolder(_server: DaemonServer, _folder: string): Promise<void> {
    return this.notYet();
  }
  async rename(_server: DaemonServer, _from: string, _to: string): Promise<void> {
    return this.notYet();
  }
  async copy(_server: DaemonServer, _file: string): Promise<string> {
    return this.notYet();
  }
  async delete(_server: DaemonServer, _paths: readonly string[]): Promise<void> {
    return this.notYet();
  }
  async chmod(_server: DaemonServer, _file: string, _mode: number): Promise<void> {
    return this.notYet();
  }
  async compress(_server: DaemonServer, _root: string, _names: readonly string[]): Promise<{ path: string; entry: VolumeEntry }> {
    return this.notYet();
  }
  async decompress(_server: DaemonServer, _root: string, _file: string): Promise<void> {
    return this.notYet();
  }
  async open(_server: DaemonServer, _file: string, _flags: OpenFlags, _mode?: number): Promise<VolumeFileHandle> {
    return this.notYet();
  }
  async openBackup(_server: DaemonServer, _backupUuid: string): Promise<{ bytes: number; stream: Readable }> {
    return this.notYet();
  }
}
