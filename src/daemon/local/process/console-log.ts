/**
 * A server's console log, `<logDir>/<uuid>.log`, kept to a bounded size (SPEC
 * 9): once it reaches its limit, its content becomes `<uuid>.log.1` (the one
 * previous file kept) and it starts again empty.
 *
 * The server's process writes the log itself, through an append-mode
 * descriptor it inherited, so that its output is kept even while no instance
 * of the service is alive (a crashed owner's orphan, see supervisor.ts). A
 * rename would leave it writing on into the renamed file, so the log is
 * rotated by copy and truncate: copied to `<uuid>.log.1.tmp`, that renamed
 * over `<uuid>.log.1` (atomic), whatever was appended meanwhile copied after
 * it, and `<uuid>.log` truncated; the process's next write lands at its new
 * end (O_APPEND). What the process writes between the last copy and the
 * truncation (one system call apart) is lost.
 *
 * A SIGKILL at any instant leaves: before the rename, `<uuid>.log` whole and a
 * stray `.log.1.tmp` (overwritten by the next rotation); after the rename and
 * before the truncation, the previous `.log.1` replaced by a copy of the head
 * of `<uuid>.log`, which is still whole (the next rotation copies it again):
 * output is never lost, at worst the old `.log.1` was replaced early.
 */
import fs from 'node:fs/promises';
import { errnoCode } from './helpers.js';

export const DEFAULT_CONSOLE_LOG_BYTES = 50 * 1024 * 1024;
/** How often a running server's log size is checked; between checks it may pass its limit by what it printed meanwhile. */
export const DEFAULT_CONSOLE_LOG_CHECK_MS = 1_000;

const COPY_CHUNK = 1024 * 1024;

/** Rotates `logPath` when it holds `maxBytes` or more; true when it did. A missing log is nothing to rotate. */
export async function rotateConsoleLog(logPath: string, maxBytes: number): Promise<boolean> {
  const size = await fs.stat(logPath).then(
    (s) => s.size,
    (err: unknown) => {
      if (errnoCode(err) === 'ENOENT') return 0;
      throw err;
    },
  );
  if (size < maxBytes) return false;
  const previous = `${logPath}.1`;
  const staging = `${previous}.tmp`;
  await fs.copyFile(logPath, staging);
  await fs.rename(staging, previous);
  await appendTail(logPath, previous);
  await fs.truncate(logPath, 0);
  return true;
}

/** Appends to `to` what `from` holds past `to`'s length: what the process wrote while `from` was being copied. */
async function appendTail(from: string, to: string): Promise<void> {
  const [source, target] = await Promise.all([fs.open(from, 'r'), fs.open(to, 'a')]);
  try {
    let position = (await target.stat()).size;
    const buffer = Buffer.allocUnsafe(COPY_CHUNK);
    for (;;) {
      const { bytesRead } = await source.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) return;
      await target.write(buffer, 0, bytesRead);
      position += bytesRead;
    }
  } finally {
    await Promise.all([source.close(), target.close()]);
  }
}

/**
 * Checks a running server's log every `checkMs` and rotates it at `maxBytes`;
 * the returned function stops the checks. One check at a time; a failure is
 * logged and retried at the next check.
 */
export function watchConsoleLog(logPath: string, maxBytes: number, checkMs: number, onError: (err: unknown) => void): () => void {
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    rotateConsoleLog(logPath, maxBytes)
      .catch(onError)
      .finally(() => (busy = false));
  }, checkMs);
  timer.unref();
  return () => clearInterval(timer);
}
