import type { AppDeps } from '../deps.js';
import type { DaemonServer, PowerSignal } from '../daemon/daemon.js';
import { SYSTEM_ACTOR } from '../modules/activity/activity.recorder.js';
import { createBackupAndWait, parseIgnored } from '../modules/backups/backups.service.js';
import { deleteServerFiles } from '../modules/backups/volume-changes.js';
import { findServerById } from '../modules/servers/servers.repository.js';
import { daemonServerForPower } from '../modules/servers/servers.service.js';
import { deleteFilesPaths, POWER_SIGNALS } from '../modules/tasks/tasks.rules.js';
import type { TaskRow } from '../db/schema.js';

/**
 * What each task action does (docs/reference/schedules.md#running-schedules). The daemon call happens here, outside
 * any transaction; the event it earns is returned, and the run writes it in
 * the same transaction that moves its cursor past the task.
 */
export type TaskDeps = Pick<AppDeps, 'db' | 'clock' | 'daemon' | 'config' | 'serverEvents'>;

interface TaskEvent {
  event: string;
  properties: Record<string, unknown>;
}

export type TaskOutcome = { ok: true; event: TaskEvent | null } | { ok: false; error: unknown };

export interface RunServer extends DaemonServer {
  readonly id: number;
}

/** Carries the task out; never throws (a failure is an outcome). */
export async function performTask(deps: TaskDeps, server: RunServer, task: TaskRow): Promise<TaskOutcome> {
  try {
    return { ok: true, event: await perform(deps, server, task) };
  } catch (error) {
    return { ok: false, error };
  }
}

async function perform(deps: TaskDeps, server: RunServer, task: TaskRow): Promise<TaskEvent | null> {
  // The server as it is now, for every action: a start applies its current limits (docs/reference/containment.md)
  // and publishes its current allocations (docs/reference/network-and-allocations.md); the run's row carries neither.
  const row = await findServerById(deps.db, server.id);
  if (!row) throw new TaskError('The server no longer exists.');
  const target = await daemonServerForPower(deps.db, row);
  switch (task.action) {
    case 'command': {
      if (task.payload === '' || /[\r\n]/.test(task.payload)) throw new TaskError('A command task needs a single-line payload.');
      await deps.daemon.sendCommand(target, task.payload);
      return { event: 'server:console.command', properties: { command: task.payload } };
    }
    case 'power': {
      const signal = task.payload as PowerSignal;
      if (!POWER_SIGNALS.includes(signal)) throw new TaskError(`"${task.payload}" is not a power signal.`);
      await deps.daemon.power(target, signal);
      return { event: `server:power.${signal}`, properties: {} };
    }
    case 'backup': {
      // Through the backups service, like a backup made by hand: counted against the
      // limit (at the limit the task fails; it does not rotate old backups out), and
      // logged as server:backup.start / .complete / .fail by that service. Waited for,
      // so that a following task (a restart, a file deletion) sees the archive done.
      const outcome = await createBackupAndWait(deps, row, SYSTEM_ACTOR, { ignored: parseIgnored(task.payload), rotate: false });
      if (outcome.error !== undefined) throw outcome.error;
      if (!outcome.backup?.is_successful) throw new TaskError('The backup did not complete.');
      return null;
    }
    case 'delete_files': {
      const files = deleteFilesPaths(task.payload);
      if (files.length === 0) throw new TaskError('A delete_files task needs at least one path.');
      // The daemon confines every path to the volume (and refuses the task otherwise). Refused,
      // deleting nothing, while a backup of the server is written or a restore runs (docs/reference/backups-and-restores.md#durability).
      await deleteServerFiles(deps, server.id, target, files);
      return { event: 'server:file.delete', properties: { files } };
    }
    default:
      throw new TaskError(`Unknown task action "${task.action}".`);
  }
}

/** A task that cannot be carried out as stored. */
class TaskError extends Error {}
