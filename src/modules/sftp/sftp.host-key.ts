/**
 * The SFTP server's host key (SPEC 15): an ed25519 key generated once into
 * `$DATA_DIR/sftp-host-key` and reused at every start, so that clients that
 * remembered it are not told the server changed.
 *
 * Creation is atomic and exclusive (app-key.ts's way): the key is written
 * and synced aside (0600), then hard-linked into place, so that a SIGKILL
 * while writing leaves at most a stray `.tmp` (never a half key under the real
 * name), and two processes starting at once agree on one key.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import ssh2 from 'ssh2';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../../private-files.js';

export const HOST_KEY_FILE = 'sftp-host-key';

export interface HostKey {
  /** The private key, OpenSSH format. */
  privateKey: string;
  /** `SHA256:...`, as `ssh-keygen -lf` and OpenSSH's clients show it. */
  fingerprint: string;
}

export function loadHostKey(dataDir: string): HostKey {
  const file = path.join(dataDir, HOST_KEY_FILE);
  const existing = readHostKey(file);
  if (existing !== null) return existing;
  fs.mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const { private: privateKey } = ssh2.utils.generateKeyPairSync('ed25519');
  const staging = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = fs.openSync(staging, 'wx', PRIVATE_FILE_MODE);
  try {
    fs.writeSync(fd, privateKey);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.linkSync(staging, file);
  } catch (err) {
    // Another process got there first: its key is the key.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    fs.rmSync(staging, { force: true });
  }
  const created = readHostKey(file);
  if (created === null) throw new Error(`${file} vanished while it was being created`);
  return created;
}

/** The key in `file`; null when there is none. A key readable by others is tightened to 0600. */
function readHostKey(file: string): HostKey | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  if ((fs.statSync(file).mode & 0o077) !== 0) fs.chmodSync(file, PRIVATE_FILE_MODE);
  const parsed = ssh2.utils.parseKey(text);
  if (parsed instanceof Error)
    throw new Error(`${file} is not a usable host key (${parsed.message}): move it away to get a new one`);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  const fingerprint = `SHA256:${createHash('sha256').update(key.getPublicSSH()).digest('base64').replace(/=+$/, '')}`;
  return { privateKey: text, fingerprint };
}
