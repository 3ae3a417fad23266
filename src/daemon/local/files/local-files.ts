/**
 * A server's files on this machine (docs/reference/files-and-sftp.md): the one layer every file
 * route, SFTP session and install goes through. Every operation resolves its
 * path descriptor-relative through SafeDir (volume-path.ts): no path reaches
 * outside the volume, even with a folder swapped for a link while it runs.
 * The modules beside this one each do one operation; this class holds the
 * volume root, the server's owner and its disk budget for them.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import {
  DaemonError,
  VolumeFileError,
  type DaemonFiles,
  type DaemonServer,
  type OpenFlags,
  type VolumeEntry,
  type VolumeFileHandle,
} from '../../daemon.js';
import { deleteVolumePaths } from '../volume/delete-paths.js';
import type { VolumeUsage } from '../volume/disk-usage.js';
import type { SafeDir } from '../volume/safe-dir.js';
import { compressEntries } from './compress.js';
import { decompressArchive } from './decompress.js';
import { DiskBudget } from './disk-budget.js';
import { changeMode, copyFile, moveEntry } from './entry-changes.js';
import { openVolumeFile } from './file-handle.js';
import { listFolder, statEntry } from './listing.js';
import { NEW_FOLDER_MODE, type Owner } from './ownership.js';
import { openRegularFile, readWholeFile } from './read-file.js';
import {
  entryName,
  makeFolder,
  openFolder,
  openParent,
  release,
  removeMadeFolders,
  volumeSegments,
  withVolume,
} from './volume-path.js';
import { toVolumeEntry } from './volume-entry.js';
import { writeFileAtomically } from './write-file.js';

/**
 * Bytes a download reads at once: 64 KiB (the default) made a 1 GiB download
 * 16,384 reads and socket writes; 1 MiB, 1,024 (docs/PERFORMANCE.md "Files").
 */
const READ_CHUNK = 1024 * 1024;

/** What the files layer needs from the daemon that owns the volumes. */
export interface LocalFilesHost {
  volumeDir(serverUuid: string): string;
  backupPath(backupUuid: string): string;
  /** The uid (and gid) the server's files belong to; undefined when unconfined (the service's own user). */
  ownerOf(server: DaemonServer): { uid: number; gid: number } | undefined;
  /** Bytes and inodes the volume uses now (a fresh measurement). */
  volumeUsage(server: DaemonServer): Promise<VolumeUsage>;
}

export class LocalFiles implements DaemonFiles {
  /** Disk and inode limits for every byte added (disk-budget.ts). */
  readonly budget: DiskBudget;
  /** Temporary files older than this (ms since the epoch) belong to no running write (temporary-names.ts). */
  private readonly startedAt = Date.now();

  constructor(private readonly host: LocalFilesHost) {
    this.budget = new DiskBudget((server) => host.volumeUsage(server));
  }

  /** Runs `work` with the folder holding `file`'s last segment held, and that segment. */
  private async inParent<T>(
    server: DaemonServer,
    file: string,
    work: (dir: SafeDir, name: string, volume: SafeDir) => Promise<T> | T,
    makeParents = false,
  ): Promise<T> {
    const segments = volumeSegments(file);
    return withVolume(this.host.volumeDir(server.uuid), async (volume) => {
      const make = makeParents ? { owner: this.owner(server), made: [] as string[][] } : undefined;
      const dir = openParent(volume, segments, file, make);
      try {
        return await work(dir, segments.at(-1)!, volume);
      } catch (err) {
        // Refused or failed: the folders made for it go too, so nothing is half done.
        if (make) removeMadeFolders(volume, make.made);
        throw err;
      } finally {
        release(dir, volume);
      }
    });
  }

  /** Runs `work` with the folder `folder` names held (`/` = the volume's root). */
  private async inFolder<T>(server: DaemonServer, folder: string, work: (dir: SafeDir) => Promise<T>): Promise<T> {
    const segments = volumeSegments(folder, { allowRoot: true });
    return withVolume(this.host.volumeDir(server.uuid), async (volume) => {
      const dir = openFolder(volume, segments, folder);
      try {
        return await work(dir);
      } finally {
        release(dir, volume);
      }
    });
  }

  private owner(server: DaemonServer): Owner {
    return this.host.ownerOf(server);
  }

  private reserver(server: DaemonServer) {
    return (bytes: number, inodes = 0) => this.budget.reserve(server, bytes, inodes);
  }

  async list(server: DaemonServer, directory: string): Promise<VolumeEntry[]> {
    return this.inFolder(server, directory, (dir) => listFolder(dir, this.startedAt));
  }

  async stat(server: DaemonServer, file: string): Promise<VolumeEntry> {
    // The volume's root too (an SFTP client's `stat /`), as a folder named `/`.
    if (volumeSegments(file, { allowRoot: true }).length === 0) {
      return this.inFolder(server, '/', async (root) => toVolumeEntry('/', fs.fstatSync(root.fd)));
    }
    return this.inParent(server, file, (dir, name) => statEntry(dir, name, file));
  }

  async readFile(server: DaemonServer, file: string, maxBytes: number): Promise<Buffer> {
    return this.inParent(server, file, (dir, name) => readWholeFile(dir, name, file, maxBytes));
  }

  async openRead(server: DaemonServer, file: string): Promise<{ entry: VolumeEntry; stream: Readable }> {
    const { fd, entry } = await this.inParent(server, file, (dir, name) => openRegularFile(dir, name, file));
    // The descriptor outlives the walk's folders: the stream reads what was opened, and closes it.
    return { entry, stream: fs.createReadStream('', { fd, autoClose: true, start: 0, highWaterMark: READ_CHUNK }) };
  }

  async writeFile(
    server: DaemonServer,
    file: string,
    content: Readable | Buffer,
    options: { readonly expectedBytes?: number } = {},
  ): Promise<VolumeEntry> {
    const expected = Buffer.isBuffer(content) ? content.length : Math.max(0, options.expectedBytes ?? 0);
    // Before a byte is read (or a folder made): the announced size, and the file itself as one more entry.
    const reservation = await this.budget.reserve(server, expected, 1);
    try {
      const entry = await this.inParent(
        server,
        file,
        (dir, name) => writeFileAtomically(dir, name, file, content, reservation, expected, this.owner(server)),
        true,
      );
      reservation.commit();
      return entry;
    } finally {
      reservation.release();
    }
  }

  async createFolder(server: DaemonServer, folder: string): Promise<void> {
    const reservation = await this.budget.reserve(server, 0, 1);
    try {
      await this.inParent(
        server,
        folder,
        (dir, name) => {
          if (dir.lstat(name) !== null) throw new VolumeFileError('exists', `"${folder}" already exists.`);
          makeFolder(dir, name, this.owner(server), NEW_FOLDER_MODE, folder);
        },
        true,
      );
      reservation.commit();
    } finally {
      reservation.release();
    }
  }

  async rename(server: DaemonServer, from: string, to: string): Promise<void> {
    const fromSegments = volumeSegments(from);
    const toSegments = volumeSegments(to);
    await withVolume(this.host.volumeDir(server.uuid), async (volume) => {
      const source = openParent(volume, fromSegments, from);
      try {
        // Before any destination folder is made: a refused move changes nothing.
        if (source.lstat(fromSegments.at(-1)!) === null) throw new VolumeFileError('not-found', `"${from}" does not exist.`);
        // Missing folders of the destination are made, as Wings does.
        const make = { owner: this.owner(server), made: [] as string[][] };
        const destination = openParent(volume, toSegments, to, make);
        try {
          moveEntry(source, fromSegments.at(-1)!, destination, toSegments.at(-1)!, [from, to]);
        } catch (err) {
          removeMadeFolders(volume, make.made);
          throw err;
        } finally {
          release(destination, volume);
        }
      } finally {
        release(source, volume);
      }
    });
  }

  async copy(server: DaemonServer, file: string): Promise<string> {
    const parentPath = volumeSegments(file).slice(0, -1);
    const name = await this.inParent(server, file, (dir, entry) =>
      copyFile(dir, entry, file, (bytes) => this.budget.reserve(server, bytes, 1), this.owner(server)),
    );
    return `/${[...parentPath, name].join('/')}`;
  }

  async delete(server: DaemonServer, paths: readonly string[]): Promise<void> {
    // Every path checked before anything is deleted: a bad one refuses the whole request.
    for (const entry of paths) volumeSegments(entry);
    // A leading `/` is the volume's root here as everywhere in this layer (deleteVolumePaths refuses it).
    const relative = paths.map((entry) => entry.replace(/^\/+/, ''));
    try {
      await deleteVolumePaths(this.host.volumeDir(server.uuid), relative);
    } catch (err) {
      if (err instanceof DaemonError) throw new VolumeFileError('invalid-path', err.message);
      throw err;
    } finally {
      this.budget.forget(server);
    }
  }

  async chmod(server: DaemonServer, file: string, mode: number): Promise<void> {
    await this.inParent(server, file, (dir, name) => changeMode(dir, name, mode, file));
  }

  async compress(server: DaemonServer, root: string, names: readonly string[]): Promise<{ path: string; entry: VolumeEntry }> {
    if (names.length === 0) throw new VolumeFileError('invalid-path', 'Name at least one file or folder to compress.');
    const entries = names.map(entryName);
    const rootSegments = volumeSegments(root, { allowRoot: true });
    const reservation = await this.budget.reserve(server, 0, 1);
    try {
      const made = await this.inFolder(server, root, (dir) => compressEntries(dir, entries, reservation, this.owner(server)));
      reservation.commit();
      return { path: `/${[...rootSegments, made.name].join('/')}`, entry: made.entry };
    } finally {
      reservation.release();
    }
  }

  async decompress(server: DaemonServer, root: string, file: string): Promise<void> {
    const rootSegments = volumeSegments(root, { allowRoot: true });
    const fileSegments = volumeSegments(file);
    const room = await this.budget.room(server);
    await withVolume(this.host.volumeDir(server.uuid), async (volume) => {
      const target = openFolder(volume, rootSegments, root);
      try {
        const archiveDir = openParent(volume, fileSegments, file);
        try {
          await decompressArchive({
            target,
            archiveDir,
            archiveName: fileSegments.at(-1)!,
            label: file,
            stagingParent: path.dirname(this.host.volumeDir(server.uuid)),
            room,
            reserve: this.reserver(server),
            owner: this.owner(server),
          });
        } finally {
          release(archiveDir, volume);
        }
      } finally {
        release(target, volume);
      }
    });
  }

  async open(server: DaemonServer, file: string, flags: OpenFlags, mode?: number): Promise<VolumeFileHandle> {
    return this.inParent(server, file, (dir, name) =>
      openVolumeFile(dir, name, file, flags, mode, this.owner(server), this.reserver(server)),
    );
  }

  async openBackup(_server: DaemonServer, backupUuid: string): Promise<{ bytes: number; stream: Readable }> {
    if (!/^[A-Za-z0-9-]+$/.test(backupUuid)) throw new VolumeFileError('not-found', 'No such backup archive.');
    let fd: number;
    try {
      fd = fs.openSync(this.host.backupPath(backupUuid), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        throw new VolumeFileError('not-found', 'The backup archive is not on this node.');
      throw err;
    }
    const bytes = fs.fstatSync(fd).size;
    return { bytes, stream: fs.createReadStream('', { fd, autoClose: true, start: 0, highWaterMark: READ_CHUNK }) };
  }
}
