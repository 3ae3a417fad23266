import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/databases.js';
import {
  eventsOf,
  makeSchedule,
  scheduleRow,
  spawnWorker,
  stopWorker,
  useSchedulerHarness,
  waitFor,
  waitForRunEnd,
  workerCommand,
  type WorkerProcess,
} from './helpers.js';

/**
 * A real worker process is killed (SIGKILL: no shutdown, no hand-over) between
 * two tasks of a run, then started again. The finished task must not run
 * again, the rest must, and the schedule must not stay processing.
 */
describeEachDatabase('scheduler crash recovery', (database) => {
  const h = useSchedulerHarness(database);
  const workers: WorkerProcess[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => stopWorker(w, 'SIGKILL')));
  });

  const start = () => {
    const worker = spawnWorker({ DATABASE_URL: h.db.url, DATA_DIR: h.dataDir, ...h.db.env });
    workers.push(worker);
    return worker;
  };

  it(`resumes after the worker is killed mid-run, without repeating the finished task (${workerCommand().kind})`, async () => {
    const { server } = await h.make.ownedServer();
    const volume = h.daemon.volumeDir(server.uuid);
    for (const name of ['first.txt', 'second.txt', 'third.txt']) fs.writeFileSync(path.join(volume, name), name);
    const exists = (name: string) => fs.existsSync(path.join(volume, name));
    const schedule = await makeSchedule(h.db.db, server, {
      name: 'crash me',
      // Due now; its next time is far away, so the interrupted run is resumed, not superseded.
      nextRunAt: Date.now(),
      tasks: [
        { action: 'delete_files', payload: 'first.txt' },
        { action: 'delete_files', payload: 'second.txt', offset: 2 },
        { action: 'delete_files', payload: 'third.txt' },
      ],
    });

    const doomed = start();
    const fileEvents = async () => (await eventsOf(h.db.db, server.id)).filter((e) => e.event === 'server:file.delete');
    await waitFor(async () => (await fileEvents()).length === 1, 15_000, `the first task (worker output: ${doomed.output()})`);
    doomed.child.kill('SIGKILL');
    await doomed.exited;

    const interrupted = await scheduleRow(h.db.db, schedule.id);
    expect(interrupted.is_processing).toBe(1);
    expect(interrupted.run_cursor).toBe(1);
    expect(exists('first.txt')).toBe(false);
    expect(exists('second.txt')).toBe(true);
    // Put the first file back: if the first task ran again, it would go.
    fs.writeFileSync(path.join(volume, 'first.txt'), 'again');

    const restarted = start();
    const row = await waitForRunEnd(h.db.db, schedule.id, 15_000).catch((err: Error) => {
      throw new Error(`${err.message}\nworker output: ${restarted.output()}`);
    });
    await stopWorker(restarted);

    expect(exists('first.txt')).toBe(true);
    expect(exists('second.txt')).toBe(false);
    expect(exists('third.txt')).toBe(false);
    expect(row).toMatchObject({ is_processing: 0, claimed_by: null, run_cursor: null });
    expect((await eventsOf(h.db.db, server.id)).map((e) => [e.event, e.properties])).toEqual([
      ['server:schedule.run', { name: 'crash me' }],
      ['server:file.delete', { files: ['first.txt'] }],
      ['server:schedule.resume', { name: 'crash me' }],
      ['server:file.delete', { files: ['second.txt'] }],
      ['server:file.delete', { files: ['third.txt'] }],
    ]);
    const tasks = await h.db.db.selectFrom('tasks').select('is_queued').where('schedule_id', '=', schedule.id).execute();
    expect(tasks.every((t) => t.is_queued === 0)).toBe(true);
  });
});
