import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * The service's own files are readable by its user only (docs/reference/containment.md): DATA_DIR
 * 0700, the database and its side files 0600. Other local users (and, once
 * servers run under uids of their own, the servers) must not read the
 * database, the keys' hashes or the backups. Modes are set explicitly rather
 * than through the umask: server processes inherit the umask, and their files
 * must keep the modes their programs ask for.
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** A mode this process changed, reported once at start. */
export interface ModeChange {
  path: string;
  /** Octal, as `ls -l` readers know it: "755". */
  from: string;
  to: string;
}

const octal = (mode: number) => (mode & 0o777).toString(8);

/**
 * Creates DATA_DIR 0700, or tightens an existing one to 0700. Refuses (throws)
 * one owned by another user: files this process created there would belong to
 * the wrong user (an admin command run as root would leave a database the
 * service cannot write), and its mode is not ours to change.
 */
export function preparePrivateDataDir(dir: string): ModeChange[] {
  // Every folder mkdir creates on the way is the service's own.
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const stat = fs.statSync(dir);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) {
    throw new Error(
      `DATA_DIR ${dir} belongs to uid ${stat.uid}, not to uid ${uid} this command runs as: ` +
        `run Quetzal as the folder's owner (e.g. sudo -u <user> npx quetzal ...) or chown -R the folder to its user`,
    );
  }
  return tighten(dir, stat.mode, PRIVATE_DIR_MODE);
}

/**
 * Creates `file` 0600 when it is missing and tightens it to 0600 when it is
 * looser, before SQLite opens it: SQLite gives the journal, `-wal` and `-shm`
 * files it creates the main file's permissions. Its folder is created 0700 when
 * missing, and left as it is otherwise (an existing folder is the operator's).
 */
export function preparePrivateFile(file: string): ModeChange[] {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: PRIVATE_DIR_MODE });
  const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT, PRIVATE_FILE_MODE);
  try {
    return tightenOpen(fd, file);
  } finally {
    fs.closeSync(fd);
  }
}

/** Tightens `file` to 0600 when it exists and is looser; creates nothing. */
export function tightenPrivateFileIfPresent(file: string): ModeChange[] {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  try {
    return tightenOpen(fd, file);
  } finally {
    fs.closeSync(fd);
  }
}

function tightenOpen(fd: number, file: string): ModeChange[] {
  const { mode } = fs.fstatSync(fd);
  if ((mode & 0o777 & ~PRIVATE_FILE_MODE) === 0) return [];
  try {
    fs.fchmodSync(fd, PRIVATE_FILE_MODE);
  } catch (err) {
    throw new Error(
      `${file} is mode ${octal(mode)} and cannot be made 0600 (${(err as NodeJS.ErrnoException).code}): chown it to the service's user`,
    );
  }
  return [{ path: file, from: octal(mode), to: octal(PRIVATE_FILE_MODE) }];
}

/** Sets `wanted` when `mode` has any permission bit outside it. */
function tighten(dir: string, mode: number, wanted: number): ModeChange[] {
  if ((mode & 0o777 & ~wanted) === 0) return [];
  fs.chmodSync(dir, wanted);
  return [{ path: dir, from: octal(mode), to: octal(wanted) }];
}

/**
 * The text of a private file (0600) in `dir`, created from `make()` when it is
 * not there yet (the app key, the SFTP host key). Creation is atomic and
 * exclusive: written and synced aside, then hard-linked into place, so a
 * SIGKILL while writing leaves at most a stray `.tmp` (never half a file under
 * the real name), and two processes starting at once agree on one content (the
 * first link wins). A file readable by others is tightened to 0600.
 */
export function readOrCreatePrivateFile(dir: string, name: string, make: () => string): string {
  const file = path.join(dir, name);
  const existing = readPrivateFile(file);
  if (existing !== null) return existing;
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const staging = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = fs.openSync(staging, 'wx', PRIVATE_FILE_MODE);
  try {
    fs.writeSync(fd, make());
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.linkSync(staging, file);
  } catch (err) {
    // Another process got there first: its content is the content.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    fs.rmSync(staging, { force: true });
  }
  const created = readPrivateFile(file);
  if (created === null) throw new Error(`${file} vanished while it was being created`);
  return created;
}

function readPrivateFile(file: string): string | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  if ((fs.statSync(file).mode & 0o077) !== 0) fs.chmodSync(file, PRIVATE_FILE_MODE);
  return text;
}
