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
