/**
 * The daemon carries out what happens on a server itself (SPEC 7). The local
 * implementation keeps volumes, archives and child processes on this machine;
 * a Wings implementation will speak to a remote node through the same interface.
 */
import type { DaemonFiles } from './files.js';

export type ServerState = 'offline' | 'starting' | 'running' | 'stopping';
export type PowerSignal = 'start' | 'stop' | 'restart' | 'kill';

/** A server's limits (SPEC 10, Pterodactyl's units); 0 = unlimited. */
export interface ServerLimits {
  readonly memoryMiB: number;
  /** Percent of one core: 100 = one core. */
  readonly cpuPercent: number;
  readonly diskMiB: number;
  /** Processes and threads; null = the daemon's default (512 when confined). */
  readonly pids: number | null;
  /** Files, folders and links in the volume; null or absent = 1 per 4 KiB of diskMiB; 0 = unlimited. */
  readonly inodes?: number | null;
}

export const NO_LIMITS: ServerLimits = Object.freeze({ memoryMiB: 0, cpuPercent: 0, diskMiB: 0, pids: null });

/**
 * An address and port of this machine that players reach a server on
 * (SPEC 13). `ip` is an address of this machine or `0.0.0.0` (every one).
 */
export interface ServerAllocation {
  readonly ip: string;
  readonly port: number;
}

export interface DaemonServer {
  readonly uuid: string;
  readonly startup: string | null;
  readonly stopCommand: string | null;
  /** Absent = no limits. */
  readonly limits?: ServerLimits;
  /**
   * The server's allocations, its primary first (SERVER_IP and SERVER_PORT);
   * published into its network namespace for TCP and UDP at its start.
   * Absent or empty = no published port.
   */
  readonly allocations?: readonly ServerAllocation[];
  /**
   * Which uid of SERVER_UID_RANGE the server runs as when confined (first +
   * slot; servers.uid_slot, unique): no two servers share a uid (SPEC 10).
   * Absent or null = SERVER_UID, shared.
   */
  readonly uidSlot?: number | null;
}

/** What `GET /resources` reports (SPEC 10): measured, not made up; 0 where the machine cannot tell. */
export interface ServerResources {
  readonly state: ServerState;
  readonly memoryBytes: number;
  /** Percent of one core over the last sampling interval (100 = one core busy). */
  readonly cpuAbsolute: number;
  readonly diskBytes: number;
  readonly networkRxBytes: number;
  readonly networkTxBytes: number;
  /** Milliseconds since the process started; 0 when offline. */
  readonly uptimeMs: number;
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
/** The server cannot take this now, e.g. its console input is full because it does not read it (SPEC 9: 409). */
export class DaemonBusyError extends Error {}

export interface Daemon {
  /** Creates the server's volume if it does not exist yet. */
  prepareVolume(server: DaemonServer): Promise<void>;
  state(server: DaemonServer): Promise<ServerState>;
  power(server: DaemonServer, signal: PowerSignal): Promise<void>;
  /** Live figures for the server (SPEC 10). */
  resources(server: DaemonServer): Promise<ServerResources>;
  /**
   * Throws what a start would refuse with before anything runs (DaemonBusyError,
   * 409: over its disk limit, SPEC 10). `power` checks it itself; a caller
   * that carries a restart out in the background asks first, to answer now.
   */
  assertStartable(server: DaemonServer): Promise<void>;
  /** Bytes the server's volume uses on disk, measured now. */
  diskUsage(server: DaemonServer): Promise<number>;
  /** Writes a console line; DaemonError when the server is not running. */
  sendCommand(server: DaemonServer, line: string): Promise<void>;
  createBackup(server: DaemonServer, backup: { uuid: string; ignored: string[] }): Promise<BackupArchive>;
  /**
   * Resolves when the restore finished; rejects (volume untouched) when it failed.
   * With `restoreId` (the restore's row), its progress is journalled on the node
   * under that id and kept after a success until `discardRestore`, so that
   * `recoverRestore` can finish or undo it after a crash.
   */
  restoreBackup(
    server: DaemonServer,
    backup: { uuid: string; sha1: string | null },
    options: { truncate: boolean; restoreId?: string; maxEntries?: number },
  ): Promise<void>;
  /** Whether server processes run confined (SPEC 10; `/health` reports it). */
  readonly containment: 'on' | 'off';
  /**
   * After the instance running restore `restoreId` died: brings the volume to
   * exactly its old tree (`rolled-back`) or exactly the restored one
   * (`restored`); `not-here` when neither the volume nor the restore's
   * progress is on this node, which must leave it alone.
   */
  recoverRestore(server: DaemonServer, restoreId: string): Promise<'restored' | 'rolled-back' | 'not-here'>;
  /** Removes what restore `restoreId` kept on the node, once its outcome is recorded. */
  discardRestore(restoreId: string): Promise<void>;
  /** The restores whose progress is kept on this node (an id each). */
  listRestores(): Promise<string[]>;
  /** Removes a backup cut short: its partial archive, and its archive if it got that far. */
  discardBackup(server: DaemonServer, backupUuid: string): Promise<void>;
  deleteBackup(server: DaemonServer, backupUuid: string): Promise<void>;
  /** A server's files (SPEC 15): every file route, SFTP session and install goes through it. */
  readonly files: DaemonFiles;
  /** Deletes paths relative to the volume; never anything outside it. */
  deleteFiles(server: DaemonServer, paths: string[]): Promise<void>;
  onStateChange(listener: (serverUuid: string, state: ServerState) => void): () => void;
  /** Told when the kernel killed a server this daemon runs for using more memory than its limit (SPEC 10). */
  onOutOfMemory(listener: (serverUuid: string) => void): () => void;
  /**
   * Told when a running server was stopped for passing its disk or inode
   * limit (SPEC 10); its console log says `server stopped: disk limit exceeded`.
   */
  onDiskLimit(listener: (serverUuid: string) => void): () => void;
  /**
   * Follows the server's console output from now on (SPEC 11): `onLine` gets
   * each new line (without its newline, cut at a bounded length). One reader
   * per server however many watch; the returned function stops this watch.
   */
  watchConsole(server: DaemonServer, onLine: (line: string) => void): () => void;
  /** Up to the last `lines` lines of the server's console output, oldest first (the websocket's `send logs`). */
  consoleHistory(server: DaemonServer, lines: number): Promise<string[]>;
  close(): Promise<void>;
}
