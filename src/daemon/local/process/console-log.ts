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
 * it, and `<uuid>.log` truncated right after the read that found its end; the
 * process's next write lands at its new end (O_APPEND). What the process
 * writes between that read and the truncation (two consecutive system calls)
 * is lost.
 *
 * A SIGKILL at any instant leaves: before the rename, `<uuid>.log` whole and a
 * stray `.log.1.tmp` (overwritten by the next rotation); after the rename and
 * before the truncation, the previous `.log.1` replaced by a copy of the head
 * of `<uuid>.log`, which is still whole (the next rotation copies it again):
 * output is never lost, at worst the old `.log.1` was replaced early.
 */
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import { PRIVATE_FILE_MODE } from '../../../private-files.js';
import { errnoCode } from './helpers.js';

export const DEFAULT_CONSOLE_LOG_BYTES = 50 * 1024 * 1024;
/** How often a running server's log size is checked; between checks it may pass its limit by what it printed meanwhile. */
export const DEFAULT_CONSOLE_LOG_CHECK_MS = 1_000;

const COPY_CHUNK = 1024 * 1024;

/**
 * Opens a server's console log for appending, readable by the service's user
 * only (docs/reference/containment.md): a log from before that rule is tightened. The server's process
 * writes through the descriptor it inherits, whatever the mode.
 */
export async function openConsoleLog(logPath: string): Promise<fs.FileHandle> {
  const handle = await fs.open(logPath, 'a', PRIVATE_FILE_MODE);
  try {
    if (((await handle.stat()).mode & 0o077) !== 0) await handle.chmod(PRIVATE_FILE_MODE);
  } catch (err) {
    await handle.close();
    throw err;
  }
  return handle;
}

/**
 * Before conmon starts writing a log (container/conmon.ts): a non-empty log
 * becomes `<uuid>.log.1`, replacing the previous copy, so that the log
 * starts empty. conmon counts its cap from what it wrote itself, not from the
 * file's size, so a log it appended to could pass the cap by what was there.
 */
export async function setAsideConsoleLog(logPath: string): Promise<void> {
  const size = await fs.stat(logPath).then(
    (s) => s.size,
    (err: unknown) => {
      if (errnoCode(err) === 'ENOENT') return 0;
      throw err;
    },
  );
  if (size > 0) await fs.rename(logPath, `${logPath}.1`);
}

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
  // The bulk is copied off the event loop; the rest is caught up and cut synchronously below.
  await fs.copyFile(logPath, staging);
  // A copy keeps the source's mode, which a log from before docs/reference/containment.md's rule may have left readable.
  await fs.chmod(staging, PRIVATE_FILE_MODE);
  await fs.rename(staging, previous);
  catchUpAndTruncate(logPath, previous);
  return true;
}

/**
 * Appends to `to` what `from` holds past `to`'s length (what the process wrote
 * while `from` was being copied), then truncates `from` right after the read
 * that found its end: synchronous calls, one after the other in the same
 * turn, so the window in which a write by the process is lost is two system
 * calls wide, not a round of the event loop.
 */
function catchUpAndTruncate(from: string, to: string): void {
  const source = fsSync.openSync(from, 'r+');
  try {
    const target = fsSync.openSync(to, 'a');
    try {
      let position = fsSync.fstatSync(target).size;
      const buffer = Buffer.allocUnsafe(COPY_CHUNK);
      for (;;) {
        const bytesRead = fsSync.readSync(source, buffer, 0, buffer.length, position);
        if (bytesRead === 0) break;
        fsSync.writeSync(target, buffer, 0, bytesRead);
        position += bytesRead;
      }
      fsSync.ftruncateSync(source, 0);
    } finally {
      fsSync.closeSync(target);
    }
  } finally {
    fsSync.closeSync(source);
  }
}

/**
 * Checks a running server's log every `checkMs` and rotates it at `maxBytes`;
 * the returned function stops the checks. One check at a time; a failure is
 * logged and retried at the next check.
 */
function sizeOrZero(file: string): number {
  try {
    return fsSync.statSync(file).size;
  } catch (err) {
    // Absent: nothing to rotate. Anything else: let the rotation run into it and report it.
    return errnoCode(err) === 'ENOENT' ? 0 : Number.POSITIVE_INFINITY;
  }
}

export function watchConsoleLog(logPath: string, maxBytes: number, checkMs: number, onError: (err: unknown) => void): () => void {
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    // A synchronous stat first: microseconds for a local file, where a thread-pool round trip per server
    // per second is what fifty running servers would notice (bench:containment).
    if (sizeOrZero(logPath) < maxBytes) return;
    busy = true;
    rotateConsoleLog(logPath, maxBytes)
      .catch(onError)
      .finally(() => (busy = false));
  }, checkMs);
  timer.unref();
  return () => clearInterval(timer);
}
