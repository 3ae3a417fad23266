/**
 * Signing in to SFTP (docs/reference/files-and-sftp.md, docs/reference/accounts.md): user `<username>.<server identifier>` (the
 * 8-character identifier or the full UUID) with the account's panel password
 * or one of its SSH keys (`publickey`),
 * then `file.sftp` on that server through the one access policy.
 *
 * Failed attempts are throttled with the web sign-in's throttles and buckets
 * (sessions.throttle.ts): they guess the same password, so the two doors
 * share one count (per address; per account and address; the account-wide
 * ceiling). A throttled attempt is refused before any password is checked.
 */
import ssh2 from 'ssh2';
import type { Queryable } from '../../db/database.js';
import { recordAccountEvent } from '../account/account-activity.js';
import { listSshKeysOfUser, sshKeyExists } from '../account/ssh-keys.repository.js';
import { fingerprintOf } from '../account/ssh-keys.service.js';
import type { ServerRow, UserRow } from '../../db/schema.js';
import type { AccessRefusal, Access, ServerAction } from '../../http/permissions.js';
import type { Clock } from '../../clock.js';
import { decideServerAction } from '../servers/access-policy.js';
import {
  ADDRESS_THROTTLE,
  PAIR_THROTTLE,
  PAIR_UNDER_ATTACK,
  SignInThrottledError,
  accountBucket,
  accountUnderAttack,
  addressBucket,
  forgetAttempts,
  pairBucket,
  pruneAttempts,
  recordAttempt,
  takeAttempt,
} from '../sessions/sessions.throttle.js';
import { PASSWORD_MAX_BYTES, verifyPassword } from '../users/passwords.js';
import { findUserForSignIn } from '../users/users.repository.js';

/**
 * What an SFTP session needs, at sign-in and at every re-check: `file.sftp`,
 * and a server that is neither suspended, installing nor being restored
 * (Pterodactyl's validateCurrentState in its SFTP authentication).
 */
export const SFTP_ACCESS: ServerAction = { permission: 'file.sftp', mutates: true, blockedDuringRestore: true };

/** Who a session acts as, and on what. */
export interface SftpIdentity {
  user: UserRow;
  /** The hash the password matched: a session ends when it changes (the password was changed). Null for a key sign-in. */
  passwordHash: string | null;
  /** The fingerprint of the account's SSH key a `publickey` sign-in used: the session ends when the key is removed. */
  keyFingerprint?: string;
  server: ServerRow;
  access: Access;
}

export type SftpSignIn =
  | { ok: true; identity: SftpIdentity }
  | { ok: false; reason: 'throttled'; retryAfterSeconds: number }
  | { ok: false; reason: 'credentials' }
  | { ok: false; reason: 'refused'; refusal: AccessRefusal };

/** `alice.1a2b3c4d` → alice and 1a2b3c4d (split at the last dot: a username may hold dots, an identifier never does). */
export function parseSftpUsername(login: string): { username: string; server: string } | null {
  const dot = login.lastIndexOf('.');
  if (dot <= 0 || dot === login.length - 1) return null;
  return { username: login.slice(0, dot), server: login.slice(dot + 1) };
}

/** A `publickey` attempt: the key offered and, once the client signs, the signature over `blob`. */
export interface SftpKeyProof {
  algo: string;
  data: Buffer;
  signature?: Buffer;
  blob?: Buffer;
  hashAlgo?: string;
}

/**
 * Checks a password (`password`) or one of the account's SSH keys (`key`;
 * ssh2's documented check: the offered key is the account's, and its
 * signature over the session blob verifies). A key offered without a
 * signature only asks whether it would do: no attempt is counted, and the
 * answer is 'key-acceptable' or 'credentials'.
 */
export async function signInToSftp(
  deps: { db: Queryable; clock: Clock },
  input: { login: string; ip: string } & ({ password: string; key?: undefined } | { key: SftpKeyProof; password?: undefined }),
): Promise<SftpSignIn | { ok: false; reason: 'key-acceptable' }> {
  const { db } = deps;
  const now = deps.clock.now();
  const parsed = parseSftpUsername(input.login);
  if (input.key && input.key.signature === undefined) {
    const found = parsed && !parsed.username.includes('@') ? await findUserForSignIn(db, parsed.username) : undefined;
    const key = found ? await accountKeyFor(db, found.user.id, input.key) : undefined;
    return key ? { ok: false, reason: 'key-acceptable' } : { ok: false, reason: 'credentials' };
  }
  try {
    await pruneAttempts(db, now);
    await takeAttempt(db, addressBucket(input.ip), ADDRESS_THROTTLE, now);
    // Usernames only: an email names an account on the web sign-in, not here.
    const found = parsed && !parsed.username.includes('@') ? await findUserForSignIn(db, parsed.username) : undefined;
    const account = accountBucket(found?.user.id ?? null, parsed?.username ?? input.login);
    const pair = pairBucket(account, input.ip);
    const underAttack = await accountUnderAttack(db, account, now);
    await takeAttempt(db, pair, underAttack ? PAIR_UNDER_ATTACK : PAIR_THROTTLE, now);
    const accountAttempt = await recordAttempt(db, account, now);

    let keyFingerprint: string | undefined;
    if (input.key) {
      const key = found ? await accountKeyFor(db, found.user.id, input.key) : undefined;
      if (!parsed || !found || !key || !keySigned(key.parsed, input.key)) return { ok: false, reason: 'credentials' };
      keyFingerprint = key.fingerprint;
    } else {
      const tooLong = Buffer.byteLength(input.password, 'utf8') > PASSWORD_MAX_BYTES;
      const matches = await verifyPassword(input.password, tooLong ? null : (found?.password ?? null));
      if (!parsed || !found || found.password === null || !matches) {
        // Pterodactyl's SftpAuthenticationController: a wrong password on an existing account is logged on it.
        if (found) {
          await recordAccountEvent(db, {
            userId: found.user.id,
            event: 'auth:sftp.fail',
            ip: input.ip,
            now,
            properties: { method: 'password' },
          });
        }
        return { ok: false, reason: 'credentials' };
      }
    }
    await forgetAttempts(db, pair, accountAttempt);

    const decision = await decideServerAction(db, found.user, parsed.server, SFTP_ACCESS);
    if (!decision.ok) return { ok: false, reason: 'refused', refusal: decision.refusal };
    const { server, access } = decision.target;
    const passwordHash = keyFingerprint === undefined ? found.password : null;
    return {
      ok: true,
      identity: { user: found.user, passwordHash, server, access, ...(keyFingerprint !== undefined ? { keyFingerprint } : {}) },
    };
  } catch (err) {
    if (err instanceof SignInThrottledError) return { ok: false, reason: 'throttled', retryAfterSeconds: err.retryAfterSeconds };
    throw err;
  }
}

/** The account's key with the offered key's fingerprint, parsed; undefined when the account has none such. */
async function accountKeyFor(db: Queryable, userId: number, offered: SftpKeyProof) {
  const fingerprint = fingerprintOf(offered.data);
  const stored = (await listSshKeysOfUser(db, userId)).find((k) => k.fingerprint === fingerprint);
  if (!stored) return undefined;
  const parsed = ssh2.utils.parseKey(stored.public_key);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || key instanceof Error || !key.getPublicSSH().equals(offered.data)) return undefined;
  return { fingerprint, parsed: key };
}

function keySigned(key: ssh2.ParsedKey, proof: SftpKeyProof): boolean {
  if (proof.signature === undefined || proof.blob === undefined) return false;
  return key.verify(proof.blob, proof.signature, proof.hashAlgo) === true;
}

/**
 * The periodic re-check of a live session: the user still exists with the
 * same password, still holds `file.sftp` on the server, and the server may
 * still be used (not suspended, installing or being restored). The fresh
 * server row and rights when so; null when the session must end.
 */
export async function recheckSftpAccess(
  db: Queryable,
  identity: SftpIdentity,
): Promise<{ server: ServerRow; access: Access } | null> {
  const found = await findUserForSignIn(db, identity.user.username);
  if (!found || found.user.id !== identity.user.id) return null;
  if (identity.keyFingerprint !== undefined) {
    if (!(await sshKeyExists(db, found.user.id, identity.keyFingerprint))) return null;
  } else if (found.password !== identity.passwordHash) {
    return null;
  }
  const decision = await decideServerAction(db, found.user, identity.server.uuid, SFTP_ACCESS);
  return decision.ok ? decision.target : null;
}
