import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, onTestFinished } from 'vitest';

/**
 * A new folder under the system's temporary folder (named `<prefix>XXXXXX`),
 * removed when the test that made it ends, or, made outside a test (while a
 * file's tests are collected), after that file's tests.
 */
export function scratchDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const remove = () => fs.rmSync(dir, { recursive: true, force: true });
  try {
    onTestFinished(remove);
  } catch {
    afterAll(remove);
  }
  return dir;
}
