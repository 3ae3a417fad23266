/**
 * Signed URLs (docs/reference/files-and-sftp.md): what `GET /files/download`, `GET /files/upload` and
 * `GET /backups/{backup}/download` hand out. A URL on this service whose
 * token (an HS256 JWT) names its purpose, the server, the user and the file
 * or backup, and lapses after 15 minutes, as Wings' download tokens do.
 *
 * Why a key of its own: the token is signed with a key derived from the app
 * key for this use only, so a websocket token (signed with the app key
 * itself) can never pass for a download link, nor the other way round.
 */
import { createHmac } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { unauthenticated } from '../../http/errors.js';

export const SIGNED_URL_LIFETIME_MS = 15 * 60 * 1000;

/** What a token lets its bearer do; each has its own path (signedUrlPath). */
export type SignedPurpose = 'file-download' | 'file-upload' | 'backup-download';

export interface SignedGrant {
  purpose: SignedPurpose;
  serverUuid: string;
  userUuid: string;
  /** The volume path a download streams. */
  file?: string;
  /** The backup a backup download streams. */
  backupUuid?: string;
}

const PATHS: Record<SignedPurpose, string> = {
  'file-download': '/download/file',
  'file-upload': '/upload/file',
  'backup-download': '/download/backup',
};

export function signedUrlPath(purpose: SignedPurpose): string {
  return PATHS[purpose];
}

const AUDIENCE = 'quetzal:signed-url';

/** The signing key of signed URLs: HMAC-SHA256 of a fixed label under the app key. */
export function signedUrlKey(appKey: Uint8Array): Uint8Array {
  return createHmac('sha256', appKey).update('quetzal signed file urls').digest();
}

export async function signGrant(key: Uint8Array, grant: SignedGrant, options: { issuer: string; now: number }): Promise<string> {
  const issuedAt = Math.floor(options.now / 1000);
  return new SignJWT({
    purpose: grant.purpose,
    server_uuid: grant.serverUuid,
    user_uuid: grant.userUuid,
    ...(grant.file !== undefined ? { file_path: grant.file } : {}),
    ...(grant.backupUuid !== undefined ? { backup_uuid: grant.backupUuid } : {}),
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(options.issuer)
    .setAudience(AUDIENCE)
    .setIssuedAt(issuedAt)
    .setExpirationTime(Math.floor((options.now + SIGNED_URL_LIFETIME_MS) / 1000))
    .sign(key);
}

/** The absolute URL (APP_URL-based) that carries a grant. */
export async function signedUrl(
  key: Uint8Array,
  grant: SignedGrant,
  options: { appUrl: string; now: number; query?: Record<string, string> },
): Promise<string> {
  const token = await signGrant(key, grant, { issuer: options.appUrl, now: options.now });
  const query = new URLSearchParams({ token, ...options.query });
  return `${options.appUrl}${signedUrlPath(grant.purpose)}?${query.toString()}`;
}

/**
 * The grant a token carries, checked: signature, HS256, issuer, audience,
 * expiry at `now` and the purpose the path serves. Anything else is a 401:
 * the token is no credential (docs/reference/api.md#errors's body).
 */
export async function verifyGrant(
  key: Uint8Array,
  token: unknown,
  options: { issuer: string; now: number; purpose: SignedPurpose },
): Promise<SignedGrant> {
  if (typeof token !== 'string' || token === '') throw unauthenticated('A signed URL token is required.');
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, key, {
      algorithms: ['HS256'],
      issuer: options.issuer,
      audience: AUDIENCE,
      currentDate: new Date(options.now),
      requiredClaims: ['exp', 'iat'],
    }));
  } catch {
    throw unauthenticated('This link is invalid or has expired.');
  }
  const { purpose, server_uuid: serverUuid, user_uuid: userUuid, file_path: file, backup_uuid: backupUuid } = payload;
  if (purpose !== options.purpose || typeof serverUuid !== 'string' || typeof userUuid !== 'string') {
    throw unauthenticated('This link is invalid or has expired.');
  }
  return {
    purpose: options.purpose,
    serverUuid,
    userUuid,
    ...(typeof file === 'string' ? { file } : {}),
    ...(typeof backupUuid === 'string' ? { backupUuid } : {}),
  };
}
