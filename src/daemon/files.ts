/**
 * A server's files as the daemon offers them (SPEC 15): the one layer every
 * file route, SFTP session and install goes through. Paths are relative to
 * the server's volume (a leading `/` is the volume's root); the local
 * implementation resolves every one descriptor-relative through SafeDir, so
 * no path reaches outside the volume, even with a folder swapped for a link
 * while an operation runs. A remote Wings node will implement it over its API.
 */
import type { Readable } from 'node:stream';
import type { DaemonServer } from './daemon.js';

/** One entry of a volume folder, before any route renders it (SPEC 15's `file_object`). */
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
  | 'invalid-path'
  | 'not-found'
  | 'exists'
  | 'not-a-file'
  | 'not-a-directory'
  | 'too-large'
  | 'disk-limit'
  | 'archive';

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
  /** Unpacks a `.tar.gz`, `.tgz`, `.tar` or `.zip` into `root` (SPEC 4's rules for hostile archives and bombs). */
  decompress(server: DaemonServer, root: string, file: string): Promise<void>;
  /** Opens a file for SFTP. */
  open(server: DaemonServer, file: string, flags: OpenFlags, mode?: number): Promise<VolumeFileHandle>;
  /** A backup's archive as a stream (`GET /backups/{backup}/download`). */
  openBackup(server: DaemonServer, backupUuid: string): Promise<{ bytes: number; stream: Readable }>;
}
