import fs from 'node:fs/promises';
import path from 'node:path';
import {
  DaemonError,
  type BackupArchive,
  type Daemon,
  type DaemonServer,
  type PowerSignal,
  type ServerState,
} from '../daemon.js';
import { createArchive } from './archive/create.js';
import { restoreArchive } from './archive/restore.js';
import { ProcessSupervisor, ServerNotRunningError, NoStartupCommandError } from './process/supervisor.js';
import { deleteVolumePaths } from './volume/delete-paths.js';

export { resolveInsideVolume } from './volume/delete-paths.js';

export interface LocalDaemonPaths {
  volumes: string;
  backups: string;
  logs: string;
  run: string;
}

export function localDaemonPaths(dataDir: string): LocalDaemonPaths {
  return {
    volumes: path.join(dataDir, 'volumes'),
    backups: path.join(dataDir, 'backups'),
    logs: path.join(dataDir, 'logs'),
    run: path.join(dataDir, 'run'),
  };
}

/** The daemon on this machine: a volume folder and a child process per server, gzip tarballs for backups (SPEC 7). */
export class LocalDaemon implements Daemon {
  readonly paths: LocalDaemonPaths;
  private readonly processes: ProcessSupervisor;

  constructor(dataDir: string, opts: { stopGraceMs?: number; logger?: ConstructorParameters<typeof ProcessSupervisor>[0]['logger'] } = {}) {
    this.paths = localDaemonPaths(dataDir);
    this.processes = new ProcessSupervisor({
      logDir: this.paths.logs,
      runDir: this.paths.run,
      ...(opts.stopGraceMs !== undefined ? { stopGraceMs: opts.stopGraceMs } : {}),
      ...(opts.logger ? { logger: opts.logger } : {}),
    });
  }

  /** Call once at start: stops processes left behind by an instance that died. */
  async start(): Promise<void> {
    await Promise.all(Object.values(this.paths).map((dir) => fs.mkdir(dir, { recursive: true })));
    await this.processes.reapOrphans();
  }

  volumeDir(serverUuid: string): string {
    return path.join(this.paths.volumes, serverUuid);
  }

  backupPath(backupUuid: string): string {
    return path.join(this.paths.backups, `${backupUuid}.tar.gz`);
  }

  private supervised(server: DaemonServer) {
    return { uuid: server.uuid, startup: server.startup, stopCommand: server.stopCommand, volumeDir: this.volumeDir(server.uuid) };
  }

  async prepareVolume(server: DaemonServer): Promise<void> {
    await fs.mkdir(this.volumeDir(server.uuid), { recursive: true });
  }

  async state(server: DaemonServer): Promise<ServerState> {
    return this.processes.state(server.uuid);
  }

  async power(server: DaemonServer, signal: PowerSignal): Promise<void> {
    const target = this.supervised(server);
    try {
      switch (signal) {
        case 'start':
          await this.prepareVolume(server);
          return await this.processes.start(target);
        case 'stop':
          return await this.processes.stop(target);
        case 'restart':
          await this.prepareVolume(server);
          return await this.processes.restart(target);
        case 'kill':
          return await this.processes.kill(target);
      }
    } catch (err) {
      if (err instanceof NoStartupCommandError) throw new DaemonError('This server has no startup command.');
      throw err;
    }
  }

  async sendCommand(server: DaemonServer, line: string): Promise<void> {
    try {
      await this.processes.sendCommand(server.uuid, line);
    } catch (err) {
      if (err instanceof ServerNotRunningError) throw new DaemonError('The server is not running.');
      throw err;
    }
  }

  async createBackup(server: DaemonServer, backup: { uuid: string; ignored: string[] }): Promise<BackupArchive> {
    await this.prepareVolume(server);
    return createArchive({ volumeDir: this.volumeDir(server.uuid), archivePath: this.backupPath(backup.uuid), ignore: backup.ignored });
  }

  async restoreBackup(
    server: DaemonServer,
    backup: { uuid: string; sha1: string | null },
    options: { truncate: boolean },
  ): Promise<void> {
    // A running server is stopped first (SPEC 4).
    if (this.processes.state(server.uuid) !== 'offline') await this.processes.stop(this.supervised(server));
    await this.prepareVolume(server);
    await restoreArchive({
      archivePath: this.backupPath(backup.uuid),
      volumeDir: this.volumeDir(server.uuid),
      expectedSha1: backup.sha1,
      truncate: options.truncate,
    });
  }

  async deleteBackup(_server: DaemonServer, backupUuid: string): Promise<void> {
    await fs.rm(this.backupPath(backupUuid), { force: true });
  }

  async deleteFiles(server: DaemonServer, paths: string[]): Promise<void> {
    await deleteVolumePaths(this.volumeDir(server.uuid), paths);
  }

  onStateChange(listener: (serverUuid: string, state: ServerState) => void): () => void {
    return this.processes.onStateChange(listener);
  }

  async close(): Promise<void> {
    await this.processes.shutdownAll();
  }
}
