/**
 * The service's secret (docs/reference/configuration.md: APP_KEY): what signs websocket tokens (SPEC
 * 11) and anything else that must prove it came from this service. Taken from
 * APP_KEY when set; otherwise 32 random bytes generated once into
 * `$DATA_DIR/app-key` (mode 0600) and reused by every later start and by every
 * instance sharing the folder. Instances on different machines must be given
 * the same APP_KEY.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { readOrCreatePrivateFile } from './private-files.js';

export const APP_KEY_FILE = 'app-key';
/** HS256 wants a key at least as long as its hash: 32 bytes. */
export const APP_KEY_MIN_BYTES = 32;

export class AppKeyError extends Error {}

/**
 * The bytes of a key as APP_KEY or the key file spells it: base64 (what
 * `openssl rand -base64 32` prints), optionally after Laravel's `base64:`
 * prefix (what the generated file holds), of at least 32 bytes; null for
 * anything else. config.ts refuses an APP_KEY this rejects.
 */
export function decodeAppKey(text: string): Buffer | null {
  const trimmed = text.trim();
  const encoded = trimmed.startsWith('base64:') ? trimmed.slice('base64:'.length) : trimmed;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return null;
  const key = Buffer.from(encoded, 'base64');
  return key.length >= APP_KEY_MIN_BYTES ? key : null;
}

function parseAppKey(text: string, source: string): Buffer {
  const key = decodeAppKey(text);
  if (key === null) {
    throw new AppKeyError(
      `${source} must be at least ${APP_KEY_MIN_BYTES} bytes in base64 (e.g. the output of: openssl rand -base64 32)`,
    );
  }
  return key;
}

/**
 * The key: APP_KEY when the environment has one, else the one in
 * `$DATA_DIR/app-key`, created on first use. Creation is atomic and
 * exclusive (written aside, then hard-linked into place), so two processes
 * starting at once agree on one key and nobody ever reads half a file.
 */
export function loadAppKey(dataDir: string, env: { APP_KEY?: string | null | undefined }): Buffer {
  const fromEnv = env.APP_KEY?.trim();
  if (fromEnv) return parseAppKey(fromEnv, 'APP_KEY');
  const text = readOrCreatePrivateFile(
    dataDir,
    APP_KEY_FILE,
    () => `base64:${randomBytes(APP_KEY_MIN_BYTES).toString('base64')}\n`,
  );
  return parseAppKey(text, path.join(dataDir, APP_KEY_FILE));
}
