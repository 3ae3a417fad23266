/**
 * One SFTP channel (docs/reference/files-and-sftp.md): the protocol's requests turned into the
 * daemon's file operations (`DaemonFiles`, so any daemon serves it), each
 * weighed first against the session's current rights (re-read by the server
 * every few seconds):
 * - list, stat, open a folder: `file.read`; open a file to read: `file.read-content`;
 * - open to write: `file.update` when the file exists, `file.create` when not
 *   (Wings' sftp handler); mkdir: `file.create`;
 * - remove, rmdir: `file.delete`; rename, setstat (chmod): `file.update`.
 * Refused: SSH_FX_PERMISSION_DENIED; missing: SSH_FX_NO_SUCH_FILE; the disk
 * limit and other refusals: SSH_FX_FAILURE with a sentence.
 *
 * Every change runs inside changeServerVolume (docs/reference/backups-and-restores.md#durability: never while a backup
 * is written or a restore runs). A file opened for writing holds it from open
 * to close, so a backup never captures a half-written upload: a backup that
 * starts meanwhile is refused (409) and can be retried, and an upload that
 * starts while a backup is written is refused (SSH_FX_FAILURE).
 */
import type { FileEntry, SFTPWrapper } from 'ssh2';
import { VolumeFileError, type DaemonServer, type OpenFlags, type VolumeFileHandle } from '../../daemon/daemon.js';
import type { ServerRow } from '../../db/schema.js';
import { HttpError } from '../../http/errors.js';
import { can, type Access, type Permission } from '../../http/permissions.js';
import { changeServerVolume, type VolumeChangeDeps } from '../backups/volume-changes.js';
import { daemonServer } from '../servers/servers.service.js';
import type { SftpActivity } from './sftp.activity.js';
import { attributesOf, longnameOf } from './sftp.attributes.js';
import { operationPath, realSftpPath } from './sftp.paths.js';

/** SSH_FXF_* (draft-ietf-secsh-filexfer-02). */
const FXF = { READ: 0x01, WRITE: 0x02, APPEND: 0x04, CREAT: 0x08, TRUNC: 0x10, EXCL: 0x20 } as const;
/** SSH_FX_* status codes. */
const FX = { OK: 0, EOF: 1, NO_SUCH_FILE: 2, PERMISSION_DENIED: 3, FAILURE: 4, OP_UNSUPPORTED: 8 } as const;

/** Entries per READDIR answer (OpenSSH's own server sends 100). */
const READDIR_BATCH = 100;
/** The most one READ answers (clients ask for 32 KiB to 256 KiB). */
const MAX_READ = 256 * 1024;
const ROOT_ATTRIBUTES = { mode: 0o40755, uid: 0, gid: 0, size: 4096, atime: 0, mtime: 0 };
const DISK_FULL = 'No space left: the server has reached its disk limit.';

/** An SFTP status with its code, thrown by a handler and sent to the client. */
class SftpStatus extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const denied = () => new SftpStatus(FX.PERMISSION_DENIED, 'Permission denied');

/** What a channel needs from its connection: the server's current row and the user's current rights. */
export interface SftpSessionContext {
  deps: VolumeChangeDeps;
  server(): ServerRow;
  access(): Access;
  activity: SftpActivity;
  /** Reports an unexpected failure (a bug): the client gets SSH_FX_FAILURE. */
  onError(err: unknown): void;
}

type OpenFile = {
  kind: 'file';
  path: string;
  file: VolumeFileHandle;
  writable: boolean;
  /** The file did not exist before this open: logged as `sftp.create`, else `sftp.write`. */
  created: boolean;
  written: boolean;
  /** Ends this handle's hold on the volume (changeServerVolume). */
  release: () => Promise<void>;
};
type OpenFolder = { kind: 'folder'; entries: FileEntry[]; next: number };

export class SftpSession {
  private readonly handles = new Map<number, OpenFile | OpenFolder>();
  private nextHandle = 1;
  private closed = false;

  constructor(
    private readonly sftp: SFTPWrapper,
    private readonly ctx: SftpSessionContext,
  ) {
    this.handle('OPEN', (id, path: string, flags: number, attrs: { mode?: number }) => this.open(id, path, flags, attrs.mode));
    this.handle('READ', (id, handle: Buffer, offset: number, length: number) => this.read(id, handle, offset, length));
    this.handle('WRITE', (id, handle: Buffer, offset: number, data: Buffer) => this.write(id, handle, offset, data));
    this.handle('CLOSE', (id, handle: Buffer) => this.closeHandle(id, handle));
    this.handle('FSTAT', (id, handle: Buffer) => this.fstat(id, handle));
    this.handle('FSETSTAT', (id, handle: Buffer, attrs: { mode?: number }) => this.fsetstat(id, handle, attrs.mode));
    this.handle('OPENDIR', (id, path: string) => this.openFolder(id, path));
    this.handle('READDIR', (id, handle: Buffer) => this.readFolder(id, handle));
    this.handle('STAT', (id, path: string) => this.stat(id, path));
    this.handle('LSTAT', (id, path: string) => this.stat(id, path));
    this.handle('REALPATH', async (id, path: string) => {
      this.sftp.name(id, [{ filename: realSftpPath(path), longname: '', attrs: {} as FileEntry['attrs'] }]);
    });
    this.handle('REMOVE', (id, path: string) => this.remove(id, path, false));
    this.handle('RMDIR', (id, path: string) => this.remove(id, path, true));
    this.handle('MKDIR', (id, path: string) => this.mkdir(id, path));
    this.handle('RENAME', (id, from: string, to: string) => this.rename(id, from, to));
    this.handle('SETSTAT', (id, path: string, attrs: { mode?: number }) => this.setstat(id, path, attrs.mode));
    // Links are neither read nor made: a link is the one thing that could name a place outside the volume.
    for (const unsupported of ['READLINK', 'SYMLINK', 'EXTENDED']) {
      this.sftp.on(unsupported, (id: number) => this.sftp.status(id, FX.OP_UNSUPPORTED, 'Not supported'));
    }
    // The client is done (EOF): its open files are closed, then the channel; the connection may open others.
    sftp.on('end', () => void this.end().finally(() => sftp.end()));
    sftp.on('close', () => void this.end());
  }

  /** Closes every open handle (releasing the volume) and writes pending activity. Idempotent. */
  async end(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const open = [...this.handles.values()];
    this.handles.clear();
    for (const entry of open) if (entry.kind === 'file') await this.finish(entry).catch(this.ctx.onError);
    await this.ctx.activity.flush();
  }

  private handle(event: string, run: (id: number, ...args: never[]) => Promise<void>): void {
    this.sftp.on(event, (id: number, ...args: never[]) => {
      run(id, ...args).catch((err: unknown) => this.fail(id, err));
    });
  }

  private fail(id: number, err: unknown): void {
    if (err instanceof SftpStatus) return this.sftp.status(id, err.code, err.message);
    if (err instanceof VolumeFileError) {
      switch (err.kind) {
        case 'not-found':
          return this.sftp.status(id, FX.NO_SUCH_FILE, 'No such file');
        case 'invalid-path':
          return this.sftp.status(id, FX.PERMISSION_DENIED, err.message);
        case 'disk-limit':
          return this.sftp.status(id, FX.FAILURE, DISK_FULL);
        case 'exists':
        case 'not-a-file':
        case 'not-a-directory':
        case 'too-large':
        case 'archive':
          return this.sftp.status(id, FX.FAILURE, err.message);
      }
    }
    // changeServerVolume's 409s (a backup is being written, a restore runs) and the like.
    if (err instanceof HttpError) return this.sftp.status(id, FX.FAILURE, err.detail);
    this.ctx.onError(err);
    this.sftp.status(id, FX.FAILURE, 'Failure');
  }

  private require(permission: Permission): void {
    if (!can(this.ctx.access(), permission)) throw denied();
  }

  private daemonServer(): DaemonServer {
    return daemonServer(this.ctx.server());
  }

  private get files() {
    return this.ctx.deps.daemon.files;
  }

  private pathOf(raw: string): string {
    const path = operationPath(raw);
    if (path === null) throw denied();
    return path;
  }

  private addHandle(entry: OpenFile | OpenFolder): Buffer {
    const id = this.nextHandle++;
    this.handles.set(id, entry);
    const buffer = Buffer.alloc(4);
    buffer.writeUInt32BE(id);
    return buffer;
  }

  private lookup(handle: Buffer): [number, OpenFile | OpenFolder] {
    const id = handle.length === 4 ? handle.readUInt32BE(0) : 0;
    const entry = this.handles.get(id);
    if (!entry) throw new SftpStatus(FX.FAILURE, 'Invalid handle');
    return [id, entry];
  }

  private fileOf(handle: Buffer): OpenFile {
    const [, entry] = this.lookup(handle);
    if (entry.kind !== 'file') throw new SftpStatus(FX.FAILURE, 'Not a file handle');
    return entry;
  }

  /** Runs one change of the volume inside changeServerVolume (docs/reference/backups-and-restores.md#durability). */
  private change<T>(work: () => Promise<T>): Promise<T> {
    return changeServerVolume(this.ctx.deps, this.ctx.server().id, 'nothing was changed', work);
  }

  /**
   * Holds changeServerVolume open until the returned release is called: the
   * lifetime of a file opened for writing. Rejects (nothing held) when the
   * volume may not change now. The release resolves once the hold is ended
   * in the database, so that a client told its file is closed finds the
   * volume free for a backup.
   */
  private holdVolume(): Promise<() => Promise<void>> {
    return new Promise((accepted, refused) => {
      let close!: () => void;
      const closed = new Promise<void>((resolve) => (close = resolve));
      const settled: Promise<void> = this.change(async () => {
        accepted(() => {
          close();
          return settled.catch(() => undefined);
        });
        await closed;
      });
      settled.catch(refused);
    });
  }

  private async exists(path: string): Promise<boolean> {
    try {
      await this.files.stat(this.daemonServer(), path);
      return true;
    } catch (err) {
      if (err instanceof VolumeFileError && err.kind === 'not-found') return false;
      throw err;
    }
  }

  private async open(id: number, raw: string, pflags: number, mode: number | undefined): Promise<void> {
    const path = this.pathOf(raw);
    const flags: OpenFlags = {
      read: (pflags & FXF.READ) !== 0,
      write: (pflags & FXF.WRITE) !== 0,
      append: (pflags & FXF.APPEND) !== 0,
      create: (pflags & FXF.CREAT) !== 0,
      truncate: (pflags & FXF.TRUNC) !== 0,
      exclusive: (pflags & FXF.EXCL) !== 0,
    };
    const writable = flags.write || flags.append || flags.create || flags.truncate;
    if (!writable) {
      this.require('file.read-content');
      const file = await this.files.open(this.daemonServer(), path, flags);
      const handle = this.addHandle({
        kind: 'file',
        path,
        file,
        writable,
        created: false,
        written: false,
        release: async () => {},
      });
      return this.sftp.handle(id, handle);
    }
    if (flags.read) this.require('file.read-content');
    const existed = await this.exists(path);
    this.require(existed ? 'file.update' : 'file.create');
    if (!existed && !flags.create) throw new SftpStatus(FX.NO_SUCH_FILE, 'No such file');
    const release = await this.holdVolume();
    let file: VolumeFileHandle;
    try {
      file = await this.files.open(this.daemonServer(), path, flags, mode === undefined ? undefined : mode & 0o777);
    } catch (err) {
      await release();
      throw err;
    }
    const created = !existed;
    const handle = this.addHandle({ kind: 'file', path, file, writable, created, written: created || flags.truncate, release });
    this.sftp.handle(id, handle);
  }

  private async read(id: number, handle: Buffer, offset: number, length: number): Promise<void> {
    const open = this.fileOf(handle);
    this.require('file.read-content');
    const buffer = Buffer.alloc(Math.min(length, MAX_READ));
    const bytes = await open.file.read(buffer, offset);
    if (bytes === 0) return this.sftp.status(id, FX.EOF);
    this.sftp.data(id, buffer.subarray(0, bytes));
  }

  private async write(id: number, handle: Buffer, offset: number, data: Buffer): Promise<void> {
    const open = this.fileOf(handle);
    if (!open.writable) throw new SftpStatus(FX.PERMISSION_DENIED, 'The file was opened for reading');
    // Rights lost while the file is open stop its writes at once (the re-check then ends the session).
    this.require(open.created ? 'file.create' : 'file.update');
    await open.file.write(data, offset);
    open.written = true;
    this.sftp.status(id, FX.OK);
  }

  private async closeHandle(id: number, handle: Buffer): Promise<void> {
    const [key, entry] = this.lookup(handle);
    this.handles.delete(key);
    if (entry.kind === 'file') await this.finish(entry);
    this.sftp.status(id, FX.OK);
  }

  /** Closes an open file, ends its hold on the volume, and notes it for the activity log. */
  private async finish(open: OpenFile): Promise<void> {
    try {
      await open.file.close();
    } finally {
      await open.release();
      if (open.writable && open.written)
        this.ctx.activity.note(open.created ? 'server:sftp.create' : 'server:sftp.write', open.path);
    }
  }

  private async fstat(id: number, handle: Buffer): Promise<void> {
    const open = this.fileOf(handle);
    this.sftp.attrs(id, attributesOf(await open.file.stat()));
  }

  private async fsetstat(id: number, handle: Buffer, mode: number | undefined): Promise<void> {
    const open = this.fileOf(handle);
    await this.chmod(open.path, mode);
    this.sftp.status(id, FX.OK);
  }

  private async setstat(id: number, raw: string, mode: number | undefined): Promise<void> {
    await this.chmod(this.pathOf(raw), mode);
    this.sftp.status(id, FX.OK);
  }

  /** SETSTAT: only the permission bits are applied (no setuid, setgid, sticky); owner, size and times are not the client's to set. */
  private async chmod(path: string, mode: number | undefined): Promise<void> {
    this.require('file.update');
    if (mode === undefined) return;
    await this.change(() => this.files.chmod(this.daemonServer(), path, mode & 0o777));
  }

  private async openFolder(id: number, raw: string): Promise<void> {
    const path = this.pathOf(raw);
    this.require('file.read');
    const listed = await this.files.list(this.daemonServer(), path);
    listed.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const entries = listed.map((entry) => ({ filename: entry.name, longname: longnameOf(entry), attrs: attributesOf(entry) }));
    this.sftp.handle(id, this.addHandle({ kind: 'folder', entries, next: 0 }));
  }

  private async readFolder(id: number, handle: Buffer): Promise<void> {
    const [, entry] = this.lookup(handle);
    if (entry.kind !== 'folder') throw new SftpStatus(FX.FAILURE, 'Not a folder handle');
    this.require('file.read');
    if (entry.next >= entry.entries.length) return this.sftp.status(id, FX.EOF);
    const batch = entry.entries.slice(entry.next, entry.next + READDIR_BATCH);
    entry.next += batch.length;
    this.sftp.name(id, batch);
  }

  private async stat(id: number, raw: string): Promise<void> {
    const path = this.pathOf(raw);
    this.require('file.read');
    // The volume's root is no entry of any folder (the files layer refuses to stat it); it reads as a folder (`cd /`).
    if (path === '/') return this.sftp.attrs(id, ROOT_ATTRIBUTES);
    this.sftp.attrs(id, attributesOf(await this.files.stat(this.daemonServer(), path)));
  }

  private async remove(id: number, raw: string, folder: boolean): Promise<void> {
    const path = this.pathOf(raw);
    this.require('file.delete');
    if (path === '/') throw denied();
    const entry = await this.files.stat(this.daemonServer(), path);
    if (folder !== entry.isDirectory) throw new SftpStatus(FX.FAILURE, folder ? 'Not a directory' : 'Is a directory');
    if (folder && (await this.files.list(this.daemonServer(), path)).length > 0)
      throw new SftpStatus(FX.FAILURE, 'Directory not empty');
    // Named without its leading `/`: LocalFiles.delete (delete_files' path rules) refuses absolute paths.
    await this.change(() => this.files.delete(this.daemonServer(), [path.slice(1)]));
    this.ctx.activity.note('server:sftp.delete', path);
    this.sftp.status(id, FX.OK);
  }

  private async mkdir(id: number, raw: string): Promise<void> {
    const path = this.pathOf(raw);
    this.require('file.create');
    await this.change(() => this.files.createFolder(this.daemonServer(), path));
    this.ctx.activity.note('server:sftp.create-directory', path);
    this.sftp.status(id, FX.OK);
  }

  private async rename(id: number, rawFrom: string, rawTo: string): Promise<void> {
    const from = this.pathOf(rawFrom);
    const to = this.pathOf(rawTo);
    this.require('file.update');
    if (from === '/' || to === '/') throw denied();
    await this.change(() => this.files.rename(this.daemonServer(), from, to));
    await this.ctx.activity.renamed(from, to);
    this.sftp.status(id, FX.OK);
  }
}
