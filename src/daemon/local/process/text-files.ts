/** Reading and removing small files that several service instances may change at the same time. */
import fs from 'node:fs/promises';
import { errnoCode, noop, randomToken } from './helpers.js';

/** A file's text, or null when it does not exist (or cannot be read). */
export async function readText(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch {
    return null;
  }
}

/**
 * Removes `file` only if it still holds `expected`. The file is first moved
 * aside (a rename is atomic), then compared: one that another instance wrote
 * in the meantime is put back, unless yet another took its place.
 */
export async function removeIfUnchanged(file: string, expected: string): Promise<boolean> {
  const aside = `${file}.${randomToken()}.gone`;
  try {
    await fs.rename(file, aside);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return false;
    throw err;
  }
  try {
    if ((await readText(aside)) === expected) return true;
    await fs.link(aside, file).catch(noop);
    return false;
  } finally {
    await fs.rm(aside, { force: true });
  }
}

export async function isRecent(file: string, ageMs: number): Promise<boolean> {
  const stats = await fs.stat(file).catch(() => null);
  return stats !== null && Date.now() - stats.mtimeMs < ageMs;
}
