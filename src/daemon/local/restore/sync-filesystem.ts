import { execFile } from 'node:child_process';

/**
 * Flushes the file system holding `target` to disk (syncfs(2), through
 * coreutils' `sync -f`): one call makes every staged file durable before the
 * journal says the move has begun, instead of an fsync per file. Node has no
 * syncfs binding. Where `sync -f` is missing, falls back to a plain `sync`.
 */
export function syncFileSystem(target: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('sync', ['-f', target], (err) => {
      if (!err) return resolve();
      execFile('sync', [], (fallbackErr) => (fallbackErr ? reject(fallbackErr) : resolve()));
    });
  });
}

const FLUSH_INTERVAL_MS = 200;

/**
 * Flushes `target`'s file system over and over while the staging runs, one
 * flush at a time, so that the disk writes the staged files while the main
 * thread is still decompressing the rest: the flush the journal waits for then
 * finds little left to write. (Left to the kernel, writeback starts only after
 * about 30 s or when dirty pages pile up, so the whole restore's data would be
 * written in that last flush, after the extraction.) Errors are ignored: the
 * final `syncFileSystem` is the one that counts.
 */
export function flushWhileStaging(target: string): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    timer = undefined;
    if (stopped) return;
    execFile('sync', ['-f', target], () => {
      if (!stopped) timer = setTimeout(flush, FLUSH_INTERVAL_MS);
    });
  };
  timer = setTimeout(flush, FLUSH_INTERVAL_MS);
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
