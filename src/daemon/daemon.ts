/**
 * The daemon carries out what happens on a server itself (SPEC 7). The local
 * implementation keeps volumes, archives and child processes on this machine;
 * a Wings implementation will speak to a remote node through the same interface.
 */
export type ServerState = 'offline' | 'starting' | 'running' | 'stopping';
export type PowerSignal = 'start' | 'stop' | 'restart' | 'kill';

export interface DaemonServer {
  readonly uuid: string;
  readonly startup: string | null;
  readonly stopCommand: string | null;
}

export interface BackupArchive {
  /** lowercase hex sha1 of the archive file */
  readonly sha1: string;
  readonly bytes: number;
}

/** The daemon could not do what was asked (SPEC 1.2: 502). */
export class DaemonError extends Error {}
/** The daemon did not answer in time (SPEC 1.2: 504). */
export class DaemonTimeoutError extends Error {}

export interface Daemon {
  /** Creates the server's volume if it does not exist yet. */
  prepareVolume(server: DaemonServer): Promise<void>;
  state(server: DaemonServer): Promise<ServerState>;
  power(server: DaemonServer, signal: PowerSignal): Promise<void>;
  /** Writes a console line; DaemonError when the server is not running. */
  sendCommand(server: DaemonServer, line: string): Promise<void>;
  createBackup(server: DaemonServer, backup: { uuid: string; ignored: string[] }): Promise<BackupArchive>;
  /** Resolves when the restore finished; rejects (volume untouched) when it failed. */
  restoreBackup(
    server: DaemonServer,
    backup: { uuid: string; sha1: string | null },
    options: { truncate: boolean },
  ): Promise<void>;
  deleteBackup(server: DaemonServer, backupUuid: string): Promise<void>;
  /** Deletes paths relative to the volume; never anything outside it. */
  deleteFiles(server: DaemonServer, paths: string[]): Promise<void>;
  onStateChange(listener: (serverUuid: string, state: ServerState) => void): () => void;
  close(): Promise<void>;
}
