/**
 * Secrets kept in the database (docs/reference/accounts.md: two-factor secrets, database host
 * and database passwords), encrypted with a key derived from the app key
 * (src/app-key.ts): AES-256-GCM, a random 12-byte nonce per value, stored as
 * `v1:<nonce>:<tag>:<ciphertext>` in base64. A value written under another
 * app key, or altered, fails to open (SecretError) rather than decrypting to
 * garbage.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

export class SecretError extends Error {}

const VERSION = 'v1';

/** The encryption key for database secrets: HKDF-SHA256 of the app key, so it is never the key that signs tokens. */
export function secretsKey(appKey: Uint8Array): Buffer {
  return Buffer.from(hkdfSync('sha256', appKey, Buffer.alloc(0), 'quetzal database secrets', 32));
}

export function sealSecret(key: Uint8Array, plaintext: string): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, nonce.toString('base64'), cipher.getAuthTag().toString('base64'), sealed.toString('base64')].join(':');
}

export function openSecret(key: Uint8Array, stored: string): string {
  const [version, nonce, tag, sealed] = stored.split(':');
  if (version !== VERSION || nonce === undefined || tag === undefined || sealed === undefined) {
    throw new SecretError('not a sealed secret');
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(nonce, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretError('the secret does not open with this app key (was APP_KEY changed?)');
  }
}
