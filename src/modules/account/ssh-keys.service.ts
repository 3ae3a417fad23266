import { createHash } from 'node:crypto';
import ssh2 from 'ssh2';
import type { Database } from '../../db/database.js';
import type { Authenticated } from '../../http/client-resolver.js';
import { ValidationError, type FieldFailure } from '../../http/errors.js';
import { recordActorEvent } from './account-activity.js';
import { deleteSshKey, insertSshKey, listSshKeysOfUser, sshKeyExists, type SshKeyRow } from './ssh-keys.repository.js';

/**
 * An account's SSH public keys (docs/reference/accounts.md; Pterodactyl's SSHKeyController and
 * StoreSSHKeyRequest), which SFTP accepts for `publickey` sign-in. Keys are
 * parsed with ssh2; DSA and RSA under 2,048 bits are refused, with
 * Pterodactyl's messages. The fingerprint is OpenSSH's `SHA256:...`.
 */
export const RSA_MIN_BITS = 2048;
const NAME_MAX = 191;

export interface ParsedPublicKey {
  /** The key in OpenSSH's one-line form (`type base64`), as stored and shown. */
  openssh: string;
  fingerprint: string;
  type: string;
}

/** OpenSSH's SHA-256 fingerprint of a key's wire blob: `SHA256:` and unpadded base64. */
export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** The RSA modulus's length in bits, read from the wire blob (string type, mpint e, mpint n). */
function rsaBits(blob: Buffer): number {
  let offset = 0;
  const next = () => {
    const length = blob.readUInt32BE(offset);
    const value = blob.subarray(offset + 4, offset + 4 + length);
    offset += 4 + length;
    return value;
  };
  next();
  next();
  let n = next();
  while (n.length > 0 && n[0] === 0) n = n.subarray(1);
  return n.length === 0 ? 0 : (n.length - 1) * 8 + (32 - Math.clz32(n[0]!));
}

/** A public key as sent, or the reason it is refused (Pterodactyl's message). */
export function parsePublicKey(text: string): ParsedPublicKey | { error: string } {
  let parsed: ReturnType<typeof ssh2.utils.parseKey>;
  try {
    parsed = ssh2.utils.parseKey(text.trim());
  } catch {
    return { error: 'The public key provided is not valid.' };
  }
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || key instanceof Error || key.isPrivateKey()) return { error: 'The public key provided is not valid.' };
  if (key.type === 'ssh-dss') return { error: 'DSA keys are not supported.' };
  const blob = key.getPublicSSH();
  if (key.type === 'ssh-rsa' && rsaBits(blob) < RSA_MIN_BITS) return { error: 'RSA keys must be at least 2048 bytes in length.' };
  return { openssh: `${key.type} ${blob.toString('base64')}`, fingerprint: fingerprintOf(blob), type: key.type };
}

export function listSshKeys(db: Database, userId: number): Promise<SshKeyRow[]> {
  return listSshKeysOfUser(db, userId);
}

/** `POST /account/ssh-keys {name, public_key}`: 422 for a bad name or key, or one the account already has. */
export async function addSshKey(
  deps: { db: Database; clock: { now(): number } },
  auth: Authenticated,
  body: Record<string, unknown>,
): Promise<SshKeyRow> {
  const failures: FieldFailure[] = [];
  const { name, public_key: publicKey } = body;
  if (name === undefined || name === null || name === '') {
    failures.push({ field: 'name', rule: 'required', detail: 'The name field is required.' });
  } else if (typeof name !== 'string') {
    failures.push({ field: 'name', rule: 'string', detail: 'The name field must be a string.' });
  } else if ([...name].length > NAME_MAX) {
    failures.push({ field: 'name', rule: 'max', detail: `The name field must not be greater than ${NAME_MAX} characters.` });
  }
  let parsed: ParsedPublicKey | { error: string } | undefined;
  if (publicKey === undefined || publicKey === null || publicKey === '') {
    failures.push({ field: 'public_key', rule: 'required', detail: 'The public key field is required.' });
  } else if (typeof publicKey !== 'string') {
    failures.push({ field: 'public_key', rule: 'string', detail: 'The public key field must be a string.' });
  } else {
    parsed = parsePublicKey(publicKey);
    if ('error' in parsed) failures.push({ field: 'public_key', rule: 'public_key', detail: parsed.error });
  }
  const userId = auth.user.id;
  const duplicate = 'The public key provided already exists on your account.';
  if (parsed && !('error' in parsed) && (await sshKeyExists(deps.db, userId, parsed.fingerprint))) {
    failures.push({ field: 'public_key', rule: 'unique', detail: duplicate });
  }
  if (failures.length > 0 || !parsed || 'error' in parsed) throw new ValidationError(failures);
  const key = parsed;
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    const row = await insertSshKey(trx, {
      user_id: userId,
      name: (name as string).trim(),
      fingerprint: key.fingerprint,
      public_key: key.openssh,
      created_at: now,
    });
    if (!row) throw ValidationError.of('public_key', 'unique', duplicate);
    await recordActorEvent(trx, auth.actor, userId, 'user:ssh-key.create', now, { fingerprint: key.fingerprint });
    return row;
  });
}

/** `POST /account/ssh-keys/remove {fingerprint}`: 204 whether or not the account had it, as Pterodactyl. */
export async function removeSshKey(
  deps: { db: Database; clock: { now(): number } },
  auth: Authenticated,
  fingerprint: unknown,
): Promise<void> {
  if (typeof fingerprint !== 'string' || fingerprint === '') {
    throw ValidationError.of('fingerprint', 'required', 'The fingerprint field is required.');
  }
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    const removed = await deleteSshKey(trx, auth.user.id, fingerprint);
    if (removed) await recordActorEvent(trx, auth.actor, auth.user.id, 'user:ssh-key.delete', now, { fingerprint });
  });
}
