/**
 * The journalled move of a staged restore into the volume, and its replay after
 * a crash (docs/RESTORE.md "Crash safety"). The journal is written before the
 * first change to the volume and once more between a truncate's emptying and
 * its filling: a few fsyncs per restore, none per file.
 */
import { crashPoint } from '../../../crash-point.js';
import { lstatOrNull } from '../archive/lstat-or-null.js';
import { VolumeMerge, type MergeOperations } from '../archive/merge.js';
import { fsyncDirectory, writeJournal, type RestoreFolder, type RestoreJournal } from './restore-folder.js';

/**
 * Starts the move: the journal says it has begun, then the volume is emptied
 * (truncate) and the staged tree moved in. The returned merge can undo what was
 * done if this throws; a crash instead leaves the journal for `finishMove`.
 */
export async function moveIntoVolume(
  folder: RestoreFolder,
  volumeDir: string,
  journal: Omit<RestoreJournal, 'phase'>,
  merge: VolumeMerge,
): Promise<void> {
  await writeJournal(folder, { ...journal, phase: journal.truncate ? 'emptying' : 'filling' });
  crashPoint('restore-moving');
  await runPhases(folder, volumeDir, { ...journal, phase: journal.truncate ? 'emptying' : 'filling' }, merge);
}

/** After a crash: runs the journalled move again from where its phase says; every step is idempotent. */
export async function finishMove(folder: RestoreFolder, volumeDir: string, journal: RestoreJournal): Promise<void> {
  await runPhases(folder, volumeDir, journal, new VolumeMerge(volumeDir, folder.displaced));
}

async function runPhases(folder: RestoreFolder, volumeDir: string, journal: RestoreJournal, merge: VolumeMerge): Promise<void> {
  if (journal.phase === 'emptying') {
    // Nothing staged has moved in yet, so everything in the volume is old and goes.
    await merge.emptyVolume();
    crashPoint('restore-emptied');
    await writeJournal(folder, { ...journal, phase: 'filling' });
  }
  // No staged tree left (removed by hand, or a clean-up cut short after its journal went): nothing more to move in.
  if ((await lstatOrNull(folder.staged)) !== null) await merge.mergeFrom(folder.staged);
  // The renames into and out of the volume's top level, made durable before the outcome is recorded.
  await fsyncDirectory(volumeDir);
  crashPoint('restore-moved');
}

export function newMerge(folder: RestoreFolder, volumeDir: string, operations?: MergeOperations): VolumeMerge {
  return new VolumeMerge(volumeDir, folder.displaced, operations);
}
