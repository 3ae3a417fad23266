/** A backup's files in the backups folder beside its archive: what a cut-short backup leaves, and the crash test's hook. */
import { readdirSync, statSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { crashPoint, crashPointArmed } from '../../../crash-point.js';

/**
 * Removes a backup cut short: createArchive's temporary files
 * (`.<archive name>.<random>.partial` beside the archive) and the archive if it got that far.
 */
export async function discardBackupFiles(backupsDir: string, archivePath: string): Promise<void> {
  const archive = path.basename(archivePath);
  const partials = (await fs.readdir(backupsDir).catch(() => [] as string[])).filter(
    (name) => name.startsWith(`.${archive}.`) && name.endsWith('.partial'),
  );
  await Promise.all(partials.map((name) => fs.rm(path.join(backupsDir, name), { force: true })));
  await fs.rm(archivePath, { force: true });
}

/** Test-only (QUETZAL_TEST_CRASH_AT=backup-writing): dies once the partial archive has its first bytes. */
export function watchForCrashWhileArchiving(backupsDir: string, archivePath: string): () => void {
  if (!crashPointArmed('backup-writing')) return () => undefined;
  const prefix = `.${path.basename(archivePath)}.`;
  const timer = setInterval(() => {
    for (const name of readdirSync(backupsDir)) {
      if (name.startsWith(prefix) && statSync(path.join(backupsDir, name), { throwIfNoEntry: false })?.size)
        crashPoint('backup-writing');
    }
  }, 1);
  return () => clearInterval(timer);
}
