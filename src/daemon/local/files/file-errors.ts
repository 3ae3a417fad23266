/**
 * System-call failures on a volume as what the caller did wrong
 * (VolumeFileError and its kind, which the routes map to a status); a
 * failure of the machine itself (EIO, EMFILE...) stays a plain error (502).
 */
import { VolumeFileError } from '../../daemon.js';

export function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

/** `err` as a VolumeFileError when its errno says the request was at fault; else `err` itself. */
export function volumeFileError(err: unknown, label: string): Error {
  if (err instanceof VolumeFileError) return err;
  switch (errnoCode(err) ?? '') {
    case 'ENOENT':
      return new VolumeFileError('not-found', `"${label}" does not exist.`);
    case 'EEXIST':
    case 'ENOTEMPTY':
      return new VolumeFileError('exists', `"${label}" already exists.`);
    case 'ENOTDIR':
      return new VolumeFileError('not-a-directory', `"${label}" is not a folder, or passes through something that is not.`);
    case 'ENXIO': // a FIFO with no reader, opened O_NONBLOCK for writing; a socket
      return new VolumeFileError('not-a-file', `"${label}" is not a regular file.`);
    case 'EISDIR':
      return new VolumeFileError('not-a-file', `"${label}" is a folder.`);
    case 'ELOOP':
      return new VolumeFileError('invalid-path', `"${label}" is a symlink; it is never followed.`);
    case 'ENAMETOOLONG':
      return new VolumeFileError('invalid-path', `"${label}" is too long.`);
    case 'EINVAL':
      return new VolumeFileError('invalid-path', `"${label}" cannot be used here (a folder cannot move into itself).`);
    case 'EDQUOT':
    case 'ENOSPC':
      return new VolumeFileError('disk-limit', 'There is no space left for this.');
    default:
      return err instanceof Error ? err : new Error(String(err));
  }
}
