import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import type { ServerRow, TaskRow } from '../../src/db/schema.js';
import { SYSTEM_ACTOR } from '../../src/modules/activity/activity.recorder.js';
import { claimServerForRestore } from '../../src/modules/backups/backups.repository.js';
import { beginBackup, completeBackup } from '../../src/modules/backups/backups.service.js';
import { beginVolumeChange, endVolumeChange } from '../../src/modules/backups/file-operations.repository.js';
import { performTask } from '../../src/scheduler/task-actions.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { eventsOf, makeSchedule, useSchedulerHarness, waitForRunEnd } from './helpers.js';

/**
 * docs/reference/backups-and-restores.md#durability, one file operation per server: a delete_files task does not change a
 * volume while a backup of it is written (nor while a restore runs), and a
 * backup whose volume changed under it anyway is not recorded as successful.
 * A backup "in flight" is a real one: begun (its row committed, completed_at
 * null) and completed later by the same service code a background job runs.
 */
describeEachDatabase('delete_files during a backup', (database) => {
  const h = useSchedulerHarness(database);

  async function serverWithFiles(...names: string[]) {
    const { owner, server } = await h.make.ownedServer();
    const volume = h.daemon.volumeDir(server.uuid);
    fs.mkdirSync(volume, { recursive: true });
    for (const name of names) fs.writeFileSync(path.join(volume, name), `contents of ${name}`);
    return { owner, server, volume };
  }

  const target = (server: ServerRow) => ({
    id: server.id,
    uuid: server.uuid,
    startup: server.startup,
    stopCommand: server.stop_command,
  });

  const deleteTask = (payload: string): TaskRow => ({
    id: 0,
    schedule_id: 0,
    sequence_id: 1,
    action: 'delete_files',
    payload,
    time_offset: 0,
    is_queued: 1,
    continue_on_failure: 0,
    created_at: 0,
    updated_at: 0,
  });

  it('fails a scheduled delete_files while a backup is written, deletes nothing, stops the run; the backup succeeds', async () => {
    const { server, volume } = await serverWithFiles('victim.txt', 'next.txt');
    const backup = await beginBackup(h.deps, server, SYSTEM_ACTOR, { name: 'in flight' });
    const schedule = await makeSchedule(h.db.db, server, {
      name: 'cleanup',
      nextRunAt: Date.now() - 1_000,
      tasks: [
        { action: 'delete_files', payload: 'victim.txt' },
        // Runs only if the run went on past the failed task, which it must not (docs/reference/schedules.md#running-schedules).
        { action: 'delete_files', payload: 'next.txt' },
      ],
    });
    await h.scheduler().tick();
    await waitForRunEnd(h.db.db, schedule.id);
    expect(fs.existsSync(path.join(volume, 'victim.txt'))).toBe(true);
    expect(fs.existsSync(path.join(volume, 'next.txt'))).toBe(true);
    expect((await eventsOf(h.db.db, server.id)).map((e) => e.event)).toEqual(['server:backup.start', 'server:schedule.run']);

    const outcome = await completeBackup(h.deps, server, backup);
    expect(outcome.error).toBeUndefined();
    expect(outcome.backup).toMatchObject({ is_successful: 1 });
    expect(fs.existsSync(h.daemon.backupPath(backup.uuid))).toBe(true);
  });

  it('answers the task with a clear reason, whether a backup is written or a restore runs', async () => {
    const { server, volume } = await serverWithFiles('a.txt');
    const backup = await beginBackup(h.deps, server, SYSTEM_ACTOR, {});
    const during = await performTask(h.deps, target(server), deleteTask('a.txt'));
    expect(during.ok).toBe(false);
    expect(String((during as { error: unknown }).error)).toMatch(/currently creating a backup; no files were deleted/);
    await completeBackup(h.deps, server, backup);

    // A run already past its status check when a restore is accepted: the task itself refuses.
    await claimServerForRestore(h.db.db, server.id, h.clock.now());
    const restoring = await performTask(h.deps, target(server), deleteTask('a.txt'));
    expect(restoring.ok).toBe(false);
    expect(String((restoring as { error: unknown }).error)).toMatch(/currently restoring a backup; no files were deleted/);
    expect(fs.existsSync(path.join(volume, 'a.txt'))).toBe(true);
  });

  it('deletes once no backup is in flight, and a backup then begun and completed succeeds', async () => {
    const { server, volume } = await serverWithFiles('a.txt', 'b.txt');
    const deleted = await performTask(h.deps, target(server), deleteTask('a.txt'));
    expect(deleted).toEqual({ ok: true, event: { event: 'server:file.delete', properties: { files: ['a.txt'] } } });
    expect(fs.existsSync(path.join(volume, 'a.txt'))).toBe(false);
    const outcome = await completeBackup(h.deps, server, await beginBackup(h.deps, server, SYSTEM_ACTOR, {}));
    expect(outcome.backup).toMatchObject({ is_successful: 1 });
  });

  it('fails a backup during which a delete slipped in, logs why, and removes its archive', async () => {
    const { server, volume } = await serverWithFiles('a.txt', 'b.txt');
    const backup = await beginBackup(h.deps, server, SYSTEM_ACTOR, { name: 'changed under it' });
    // A delete that got past the guard (its lease lapsed, another path): it bumps, deletes, bumps again.
    await beginVolumeChange(h.db.db, server.id, h.clock.now(), h.clock.now() - 1);
    await h.daemon.deleteFiles(target(server), ['a.txt']);
    await endVolumeChange(h.db.db, server.id);
    expect(fs.existsSync(path.join(volume, 'a.txt'))).toBe(false);

    const outcome = await completeBackup(h.deps, server, backup);
    expect(outcome.error).toBeInstanceOf(Error);
    expect(outcome.backup).toMatchObject({ is_successful: 0, checksum: null, bytes: 0 });
    expect(outcome.backup?.completed_at).not.toBeNull();
    expect(fs.existsSync(h.daemon.backupPath(backup.uuid))).toBe(false);
    const events = await eventsOf(h.db.db, server.id);
    expect(events.map((e) => [e.event, e.properties])).toEqual([
      ['server:backup.start', { name: 'changed under it', locked: false }],
      ['server:backup.fail', { name: 'changed under it', reason: 'volume changed' }],
    ]);
  });

  it('refuses a backup and a restore while a delete is in flight, and not once its lease lapsed', async () => {
    const { owner, server } = await serverWithFiles('a.txt');
    const now = h.clock.now();
    await beginVolumeChange(h.db.db, server.id, now, now + 60_000);
    await expect(beginBackup(h.deps, server, SYSTEM_ACTOR, {})).rejects.toMatchObject({
      status: 409,
      code: 'ConflictHttpException',
    });
    const done = await completeBackup(h.deps, server, await makeFinishedBackupAfter(server, now));
    const restore = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid_short}/backups/${done.backup!.uuid}/restore`,
      payload: {},
    });
    expect(restore.statusCode).toBe(409);
    expect(
      (await h.db.db.selectFrom('servers').select('status').where('id', '=', server.id).executeTakeFirstOrThrow()).status,
    ).toBeNull();

    // The delete's process died: once its lease lapsed, backups go ahead.
    await h.db.db
      .updateTable('servers')
      .set({ volume_change_lease_until: now - 1 })
      .where('id', '=', server.id)
      .execute();
    const later = await completeBackup(h.deps, server, await beginBackup(h.deps, server, SYSTEM_ACTOR, {}));
    expect(later.backup).toMatchObject({ is_successful: 1 });
  });

  /** A successful backup to restore from, made after the in-flight mark is lifted and then put back. */
  async function makeFinishedBackupAfter(server: ServerRow, now: number) {
    await h.db.db.updateTable('servers').set({ volume_changes_in_flight: 0 }).where('id', '=', server.id).execute();
    const backup = await beginBackup(h.deps, server, SYSTEM_ACTOR, {});
    await h.db.db
      .updateTable('servers')
      .set({ volume_changes_in_flight: 1, volume_change_lease_until: now + 60_000 })
      .where('id', '=', server.id)
      .execute();
    return backup;
  }
});
