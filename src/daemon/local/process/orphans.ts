/**
 * What a service instance that is gone (stopped with SERVERS_ON_SHUTDOWN=keep,
 * crashed, SIGKILLed) left running: adopted when its launcher can take it
 * over (a container with its monitor, docs/reference/power-and-console.md#servers-outlive-the-service), stopped otherwise; and
 * sweeping what a crash left in the run folder.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { errnoCode } from './helpers.js';
import { ownerAlive } from './owner.js';
import { examinePidFile, isSpawned, type PidFileContents } from './pid-record.js';
import type { ServerLauncher } from './launcher.js';
import { endGroup, signalRecorded } from './process-group.js';
import type { ProcessLogger } from './supervisor-options.js';
import { isRecent, readText, removeIfUnchanged } from './text-files.js';

/** Orphans cannot be sent their stop command (their stdin died with the old service), so they get a short SIGTERM grace only. */
const MAX_REAP_GRACE_MS = 3_000;
/** A temporary pid file younger than this that cannot be parsed may be one being written right now. */
const TEMP_FILE_MIN_AGE_MS = 30_000;
/** `<uuid>.pid`, `<uuid>.pid.tmp` (older versions) and `<uuid>.pid.<token>.tmp`. */
const PID_FILE_NAME = /^([A-Za-z0-9_-]+)\.pid(?:(\.[0-9a-f]+)?(\.tmp))?$/;
/**
 * `<uuid>.<token>.fifo` (a console pipe being opened), `<uuid>.pid.<token>.gone` (a pid file being removed)
 * and `<uuid>.pid.adopt` (an adoption's lock, held for milliseconds: pid-files.ts).
 */
const LEFTOVER_FILE_NAME = /^[A-Za-z0-9_-]+\.(?:[0-9a-f]+\.fifo|pid\.[0-9a-f]+\.gone|pid\.adopt)$/;

/**
 * Takes over a dead instance's running server; true when it did (the pid
 * file then names this instance), false when it cannot (it is then stopped).
 */
export type Adopter = (serverUuid: string, found: PidFileContents) => Promise<boolean>;

/**
 * Call once when the daemon starts, before any start: adopts the servers a
 * previous instance left running (`adopt`), stops those it cannot adopt and
 * deletes their pid files, so that afterwards every server process running
 * is owned by a live instance. Processes of live instances are left alone.
 */
export async function reapOrphans(
  runDir: string,
  stopGraceMs: number,
  log: ProcessLogger,
  launcher: ServerLauncher,
  adopt: Adopter = async () => false,
): Promise<void> {
  let names: string[];
  try {
    names = await fs.readdir(runDir);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return;
    throw err;
  }
  // What a crash in the middle of opening a console pipe or of removing a pid file leaves.
  await Promise.all(
    names
      .filter((name) => LEFTOVER_FILE_NAME.test(name))
      .map(async (name) => {
        const file = path.join(runDir, name);
        if (!(await isRecent(file, TEMP_FILE_MIN_AGE_MS))) await fs.rm(file, { force: true });
      }),
  );
  // `.tmp`: a crash between writing a pid file and moving it into place; its process may well run.
  const pidFiles = names.flatMap((name) => {
    const match = PID_FILE_NAME.exec(name);
    return match?.[1] ? [{ serverUuid: match[1], file: path.join(runDir, name), temporary: match[3] !== undefined }] : [];
  });
  await Promise.all(pidFiles.map((pidFile) => reapPidFile(pidFile, stopGraceMs, log, launcher, adopt)));
}

async function reapPidFile(
  { serverUuid, file, temporary }: { serverUuid: string; file: string; temporary: boolean },
  stopGraceMs: number,
  log: ProcessLogger,
  launcher: ServerLauncher,
  adopt: Adopter,
): Promise<void> {
  const raw = await readText(file);
  if (raw === null) return; // removed meanwhile
  const found = examinePidFile(raw);
  if (!found) {
    // A temporary file may be one that another instance is writing right now.
    if (temporary && (await isRecent(file, TEMP_FILE_MIN_AGE_MS))) return;
    log.warn({ serverUuid, file }, 'removing an unreadable pid file');
  } else if (ownerAlive(found.record.owner)) {
    return; // run by a live instance: this one, or another (see "Several instances on one machine")
  } else if (isSpawned(found.record) && found.state === 'running') {
    const record = found.record;
    // A `.tmp` file is a crash between writing and renaming: the real pid file may name it too; stop it as before.
    if (!temporary && (await adopt(serverUuid, found))) return;
    log.warn(
      { serverUuid, pid: record.pid, ownerPid: record.owner?.pid, command: record.command },
      'stopping a server process left behind by a previous run',
    );
    try {
      await endGroup(record, Math.min(stopGraceMs, MAX_REAP_GRACE_MS), () => signalRecorded(record, 'SIGTERM'));
    } catch (err) {
      log.error({ err, serverUuid, pid: record.pid }, 'could not stop a left-over server process');
      return; // keep the file: the daemon's next start tries again
    }
  }
  if (found && isSpawned(found.record) && found.record.container) {
    try {
      await launcher.release(serverUuid, found.record);
    } catch (err) {
      log.error({ err, serverUuid }, 'could not remove a left-over container');
      return; // keep the file: the daemon's next start tries again
    }
  }
  if (temporary) await fs.rm(file, { force: true });
  else await removeIfUnchanged(file, raw);
}
