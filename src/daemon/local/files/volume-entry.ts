/** A stat as a VolumeEntry (docs/reference/files-and-sftp.md's `file_object` before rendering): a link is reported as a link. */
import type fs from 'node:fs';
import type { VolumeEntry } from '../../daemon.js';

export function toVolumeEntry(name: string, stat: fs.Stats): VolumeEntry {
  return {
    name,
    mode: stat.mode,
    size: stat.size,
    isFile: stat.isFile(),
    isDirectory: stat.isDirectory(),
    isSymlink: stat.isSymbolicLink(),
    createdAt: stat.birthtimeMs > 0 ? stat.birthtime : stat.ctime,
    modifiedAt: stat.mtime,
  };
}
