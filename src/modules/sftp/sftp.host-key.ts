/**
 * The SFTP server's host key (docs/reference/files-and-sftp.md): an ed25519 key generated once into
 * `$DATA_DIR/sftp-host-key` and reused at every start, so that clients that
 * remembered it are not told the server changed.
 *
 * Creation is atomic and exclusive (private-files.ts's readOrCreatePrivateFile): the key is written
 * and synced aside (0600), then hard-linked into place, so that a SIGKILL
 * while writing leaves at most a stray `.tmp` (never a half key under the real
 * name), and two processes starting at once agree on one key.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import ssh2 from 'ssh2';
import { readOrCreatePrivateFile } from '../../private-files.js';

export const HOST_KEY_FILE = 'sftp-host-key';

export interface HostKey {
  /** The private key, OpenSSH format. */
  privateKey: string;
  /** `SHA256:...`, as `ssh-keygen -lf` and OpenSSH's clients show it. */
  fingerprint: string;
}

export function loadHostKey(dataDir: string): HostKey {
  const text = readOrCreatePrivateFile(dataDir, HOST_KEY_FILE, () => ssh2.utils.generateKeyPairSync('ed25519').private);
  const parsed = ssh2.utils.parseKey(text);
  if (parsed instanceof Error) {
    throw new Error(
      `${path.join(dataDir, HOST_KEY_FILE)} is not a usable host key (${parsed.message}): move it away to get a new one`,
    );
  }
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  const fingerprint = `SHA256:${createHash('sha256').update(key.getPublicSSH()).digest('base64').replace(/=+$/, '')}`;
  return { privateKey: text, fingerprint };
}
