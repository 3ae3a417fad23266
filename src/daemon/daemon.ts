/**
 * The daemon carries out what happens on a server itself (docs/reference/schedules.md#running-schedules). The local
 * implementation keeps volumes, archives and child processes on this machine;
 * a Wings implementation will speak to a remote node through the same interface.
 */
import type { Readable } from 'node:stream';

export type ServerState = 'offline' | 'starting' | 'running' | 'stopping';
export type PowerSignal = 'start' | 'stop' | 'restart' | 'kill';

/** A server's limits (docs/reference/containment.md, Pterodactyl's units); 0 = unlimited. */
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
 * (docs/reference/network-and-allocations.md). `ip` is an address of this machine or `0.0.0.0` (every one).
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
   * slot; servers.uid_slot, unique): no two servers share a uid (docs/reference/containment.md).
   * Absent or null = SERVER_UID, shared.
   */
  readonly uidSlot?: number | null;
  /** The image the server runs on (docs/reference/eggs-and-installs.md); absent or null = `host`, the machine's own /usr. */
  readonly image?: string | null;
  /**
   * More environment for the server's process (docs/reference/eggs-and-installs.md): STARTUP, SERVER_MEMORY,
   * SERVER_IP, SERVER_PORT, P_SERVER_LOCATION and the egg's variables, filled
   * in by the panel. It cannot replace HOME, PATH, USER or P_SERVER_UUID.
   */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * The egg's `config.startup.done`: the state stays `starting` until a console
   * line contains one of these, then `running`. Absent or empty = `running` as
   * soon as the process is up (today's behaviour).
   */
  readonly doneLines?: readonly string[];
  /** Files the daemon edits in the volume before every start (the egg's `config.files`, values filled in). */
  readonly configFiles?: readonly ConfigFileEdit[];
}

/** Wings' configuration file parsers (docs/reference/eggs-and-installs.md). */
export type ConfigFileParser = 'properties' | 'yaml' | 'json' | 'ini' | 'xml' | 'file';

/**
 * One file an egg's `config.files` edits at every start. `find` maps a key
 * (a dotted path for yaml/json, `section.key` for ini, an XPath-like path for
 * xml, the line's start for `file`) to its value, already filled in from the
 * server's allocation and variables by the panel.
 */
export interface ConfigFileEdit {
  /** Relative to the volume. */
  readonly file: string;
  readonly parser: ConfigFileParser;
  /**
   * A value, or (Wings' conditional form) `{ "<if value>": "<replace with>" }`:
   * replaced only where the value is that now (`regex:<expression>`: what the
   * expression matches in it is replaced); for properties, yaml and json.
   */
  readonly find: Readonly<Record<string, string | Readonly<Record<string, string>>>>;
}

/** What an install runs (docs/reference/eggs-and-installs.md): the egg's `scripts.installation`, in an installer box of its own. */
export interface InstallScript {
  readonly script: string;
  /** The image to run it on: the egg's `container`, as an image name (`host` when none of that name exists). */
  readonly image: string;
  /** The shell that runs the script: `bash`, `ash` or `sh`. */
  readonly entrypoint: string;
  /** The server's environment (variables, SERVER_MEMORY...) for the script. */
  readonly environment: Readonly<Record<string, string>>;
}

export interface InstallOutcome {
  readonly exitCode: number;
  /** Set when the install did not run to its end: why (a missing image, the box failed to start...). */
  readonly error?: string;
}

/** An image on the node (docs/reference/eggs-and-installs.md). */
export interface ImageInfo {
  readonly name: string;
  /** Bytes of its root filesystem on disk (0 for `host`). */
  readonly sizeBytes: number;
  readonly source: 'host' | 'build' | 'import';
  readonly createdAt: number;
}

/** The node's images (docs/reference/eggs-and-installs.md): read-only root filesystems that servers share. `host` always exists. */
export interface DaemonImages {
  list(): Promise<ImageInfo[]>;
  /** null when no image of that name exists. */
  get(name: string): Promise<ImageInfo | null>;
  /** Builds (or rebuilds, swapped in atomically) an image from Debian's packages; `onLine` gets the build's output. */
  build(
    name: string,
    options: { packages: readonly string[]; suite?: string },
    onLine?: (line: string) => void,
  ): Promise<ImageInfo>;
  /** Imports a `docker save` or OCI archive as an image (replacing one of that name atomically). */
  import(name: string, archivePath: string, onLine?: (line: string) => void): Promise<ImageInfo>;
  /** Removes an image; the caller has checked no server uses it. `host` cannot be removed. */
  remove(name: string): Promise<void>;
}

/** What `GET /resources` reports (docs/reference/containment.md): measured, not made up; 0 where the machine cannot tell. */
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

/** The daemon could not do what was asked (docs/reference/api.md#errors: 502). */
export class DaemonError extends Error {}
/** The daemon did not answer in time (docs/reference/api.md#errors: 504). */
export class DaemonTimeoutError extends Error {}
/** The server cannot take this now, e.g. its console input is full because it does not read it (docs/reference/backups-and-restores.md#durability: 409). */
export class DaemonBusyError extends Error {}

export interface Daemon {
  /** Creates the server's volume if it does not exist yet. */
  prepareVolume(server: DaemonServer): Promise<void>;
  state(server: DaemonServer): Promise<ServerState>;
  power(server: DaemonServer, signal: PowerSignal): Promise<void>;
  /** Live figures for the server (docs/reference/containment.md). */
  resources(server: DaemonServer): Promise<ServerResources>;
  /**
   * Throws what a start would refuse with before anything runs (DaemonBusyError,
   * 409: over its disk limit, docs/reference/containment.md). `power` checks it itself; a caller
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
  /** Whether server processes run confined (docs/reference/containment.md; `/health` reports it). */
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
  /** A server's files (docs/reference/files-and-sftp.md): every file route, SFTP session and install goes through it. */
  readonly files: DaemonFiles;
  /** The node's images (docs/reference/eggs-and-installs.md). */
  readonly images: DaemonImages;
  /**
   * Runs an install script against the server's volume (at `/mnt/server`) in an
   * installer box of its own, with outbound network (docs/reference/eggs-and-installs.md). `onLine` gets each
   * output line; the output is kept in the server's install log too. Resolves
   * with the script's exit code once it ended; the server must not be running.
   */
  install(server: DaemonServer, script: InstallScript, onLine: (line: string) => void): Promise<InstallOutcome>;
  /** Up to the last `lines` lines of the server's latest install, oldest first. */
  installLog(server: DaemonServer, lines: number): Promise<string[]>;
  /**
   * Ends an install of this server on the node (this instance's, or one a dead
   * instance left); resolves once none runs. DaemonBusyError when a live other
   * instance of the service runs it. With `reason`, the install log's last
   * line says the install failed, and why.
   */
  abortInstall(server: DaemonServer, reason?: string): Promise<void>;
  /** Whether an install of this server runs on the node: this instance's, or a live other instance's (a `server:reinstall` command). */
  installRunning(server: DaemonServer): Promise<boolean>;
  /** Removes everything the node keeps for the server: volume, console and install logs, network; it must not be running. */
  removeServer(server: DaemonServer): Promise<void>;
  /** Deletes paths relative to the volume; never anything outside it. */
  deleteFiles(server: DaemonServer, paths: string[]): Promise<void>;
  onStateChange(listener: (serverUuid: string, state: ServerState) => void): () => void;
  /** Told when the kernel killed a server this daemon runs for using more memory than its limit (docs/reference/containment.md). */
  onOutOfMemory(listener: (serverUuid: string) => void): () => void;
  /**
   * Told when a running server was stopped for passing its disk or inode
   * limit (docs/reference/containment.md); its console log says `server stopped: disk limit exceeded`.
   */
  onDiskLimit(listener: (serverUuid: string) => void): () => void;
  /**
   * Follows the server's console output from now on (docs/reference/power-and-console.md#websocket): `onLine` gets
   * each new line (without its newline, cut at a bounded length). One reader
   * per server however many watch; the returned function stops this watch.
   */
  watchConsole(server: DaemonServer, onLine: (line: string) => void): () => void;
  /** Up to the last `lines` lines of the server's console output, oldest first (the websocket's `send logs`). */
  consoleHistory(server: DaemonServer, lines: number): Promise<string[]>;
  close(): Promise<void>;
}

/*
 * A server's files as the daemon offers them (docs/reference/files-and-sftp.md): the one layer every
 * file route, SFTP session and install goes through. Paths are relative to
 * the server's volume (a leading `/` is the volume's root); the local
 * implementation resolves every one descriptor-relative through SafeDir, so
 * no path reaches outside the volume, even with a folder swapped for a link
 * while an operation runs. A remote Wings node will implement it over its API.
 */

/** One entry of a volume folder, before any route renders it (docs/reference/files-and-sftp.md's `file_object`). */
export interface VolumeEntry {
  readonly name: string;
  /** st_mode: the type bits and the permission bits. */
  readonly mode: number;
  /** Bytes (a link: the length of its target's name). */
  readonly size: number;
  readonly isFile: boolean;
  readonly isDirectory: boolean;
  readonly isSymlink: boolean;
  readonly createdAt: Date;
  readonly modifiedAt: Date;
}

/**
 * Why a file operation was refused; nothing was changed. Routes map `kind`
 * to a status: invalid-path 400, not-found 404, exists 409 (Pterodactyl
 * answers 400 for some; the files routes decide and document it),
 * not-a-file / not-a-directory 400, too-large 400, disk-limit 409, archive 400.
 */
export type VolumeFileErrorKind =
  'invalid-path' | 'not-found' | 'exists' | 'not-a-file' | 'not-a-directory' | 'too-large' | 'disk-limit' | 'archive';

export class VolumeFileError extends Error {
  constructor(
    readonly kind: VolumeFileErrorKind,
    message: string,
  ) {
    super(message);
  }
}

/** How an SFTP session opens a file (SSH_FXF_* flags). */
export interface OpenFlags {
  readonly read: boolean;
  readonly write: boolean;
  readonly append: boolean;
  readonly create: boolean;
  readonly truncate: boolean;
  readonly exclusive: boolean;
}

/** An open file of a volume, for SFTP's handle-based reads and writes. */
export interface VolumeFileHandle {
  /** Bytes read into `buffer` from `position`; 0 at the end. */
  read(buffer: Buffer, position: number): Promise<number>;
  /** Writes all of `data` at `position`; growth past the server's disk limit is refused (`disk-limit`) and not written. */
  write(data: Buffer, position: number): Promise<void>;
  stat(): Promise<VolumeEntry>;
  close(): Promise<void>;
}

export interface DaemonFiles {
  /** Every entry of a folder (no cap: 100,000 entries list in full), in no particular order. */
  list(server: DaemonServer, directory: string): Promise<VolumeEntry[]>;
  /** The entry itself (a link is reported as a link, never followed). */
  stat(server: DaemonServer, file: string): Promise<VolumeEntry>;
  /** A regular file's bytes; `too-large` over `maxBytes`. */
  readFile(server: DaemonServer, file: string, maxBytes: number): Promise<Buffer>;
  /** A regular file's bytes as a stream (downloads), with its entry. */
  openRead(server: DaemonServer, file: string): Promise<{ entry: VolumeEntry; stream: Readable }>;
  /**
   * Creates or replaces a regular file with `content`, making missing folders.
   * Written beside the target and renamed over it: a failure or a SIGKILL
   * never leaves a half file in its place. `expectedBytes` (when the caller
   * knows the size) is checked against the disk limit before a byte is read;
   * the bytes are counted as they arrive either way.
   */
  writeFile(
    server: DaemonServer,
    file: string,
    content: Readable | Buffer,
    options?: { readonly expectedBytes?: number },
  ): Promise<VolumeEntry>;
  /** Makes a folder (and missing parents); `exists` when an entry of that name is there. */
  createFolder(server: DaemonServer, folder: string): Promise<void>;
  /** Moves an entry; `exists` when the destination is taken (never replaced). */
  rename(server: DaemonServer, from: string, to: string): Promise<void>;
  /** Copies a file beside itself with Pterodactyl's naming (`name copy.ext`, `name copy 1.ext`, ...); returns the copy's path. */
  copy(server: DaemonServer, file: string): Promise<string>;
  /** Deletes entries with everything below them; an absent one is skipped. */
  delete(server: DaemonServer, paths: readonly string[]): Promise<void>;
  /** Sets permission bits (at most 0o777: no setuid, setgid or sticky bit). */
  chmod(server: DaemonServer, file: string, mode: number): Promise<void>;
  /** Packs `names` (entries of `root`) into a new `.tar.gz` in `root`; returns its path and entry. */
  compress(server: DaemonServer, root: string, names: readonly string[]): Promise<{ path: string; entry: VolumeEntry }>;
  /** Unpacks a `.tar.gz`, `.tgz`, `.tar` or `.zip` into `root` (docs/reference/backups-and-restores.md#restoring's rules for hostile archives and bombs). */
  decompress(server: DaemonServer, root: string, file: string): Promise<void>;
  /** Opens a file for SFTP. */
  open(server: DaemonServer, file: string, flags: OpenFlags, mode?: number): Promise<VolumeFileHandle>;
  /** A backup's archive as a stream (`GET /backups/{backup}/download`). */
  openBackup(server: DaemonServer, backupUuid: string): Promise<{ bytes: number; stream: Readable }>;
}
