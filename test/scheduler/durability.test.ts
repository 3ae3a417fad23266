import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { openDatabase } from '../../src/db/database.js';
import { startScheduler } from '../../src/scheduler/scheduler.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { eventsOf, makeSchedule, scheduleRow, useSchedulerHarness, waitFor, waitForRunEnd } from './helpers.js';

/**
 * A run is state in the database: claimed under a lease, fenced by its run
 * number, its progress a cursor. These tests play the other instance (or the
 * dead one) by writing that state directly.
 */
describeEachDatabase('scheduler durability', (database) => {
  const h = useSchedulerHarness(database);

  async function serverWithFiles(...names: string[]) {
    const { owner, server } = await h.make.ownedServer();
    const volume = h.daemon.volumeDir(server.uuid);
    for (const name of names) fs.writeFileSync(path.join(volume, name), name);
    const exists = (name: string) => fs.existsSync(path.join(volume, name));
    return { owner, server, exists };
  }

  /** Makes the schedule look like a run interrupted after its first task. */
  async function interruptAfterFirstTask(id: number, holder: string, leaseExpiresAt: number, nextRunAt: number) {
    await h.db.db
      .updateTable('schedules')
      .set({
        is_processing: 1,
        claimed_by: holder,
        lease_expires_at: leaseExpiresAt,
        run_number: 7,
        run_cursor: 1,
        run_step_at: Date.now() - 500,
        next_run_at: nextRunAt,
      })
      .where('id', '=', id)
      .execute();
    await h.db.db.updateTable('tasks').set({ is_queued: 1 }).where('schedule_id', '=', id).where('sequence_id', '=', 2).execute();
  }

  const DEAD_ELSEWHERE = 'quetzal|another-host|0123456789ab|4242|cafe0001';

  it('resumes a run whose lease expired from its cursor: finished tasks are not repeated', async () => {
    const { server, exists } = await serverWithFiles('one.txt', 'two.txt', 'three.txt');
    const schedule = await makeSchedule(h.db.db, server, {
      name: 'resumable',
      tasks: [
        { action: 'delete_files', payload: 'one.txt' },
        { action: 'delete_files', payload: 'two.txt' },
        { action: 'delete_files', payload: 'three.txt', offset: 1 },
      ],
    });
    await interruptAfterFirstTask(schedule.id, DEAD_ELSEWHERE, Date.now() - 1, Date.now() + 3_600_000);
    const scheduler = h.scheduler();
    await scheduler.tick();
    const row = await waitForRunEnd(h.db.db, schedule.id);

    expect(exists('one.txt')).toBe(true);
    expect(exists('two.txt')).toBe(false);
    expect(exists('three.txt')).toBe(false);
    expect(row).toMatchObject({ is_processing: 0, claimed_by: null, lease_expires_at: null, run_cursor: null });
    expect((await eventsOf(h.db.db, server.id)).map((e) => [e.event, e.properties])).toEqual([
      ['server:schedule.resume', { name: 'resumable' }],
      ['server:file.delete', { files: ['two.txt'] }],
      ['server:file.delete', { files: ['three.txt'] }],
    ]);
  });

  it('closes an interrupted run whose next time has come, and runs that time afresh', async () => {
    const { server, exists } = await serverWithFiles('one.txt', 'two.txt');
    const schedule = await makeSchedule(h.db.db, server, {
      name: 'superseded',
      cron: '* * * * *',
      tasks: [
        { action: 'delete_files', payload: 'one.txt' },
        { action: 'delete_files', payload: 'two.txt' },
      ],
    });
    await interruptAfterFirstTask(schedule.id, DEAD_ELSEWHERE, Date.now() - 1, Date.now() - 1);
    const scheduler = h.scheduler();
    await scheduler.tick();
    await waitFor(async () => (await eventsOf(h.db.db, server.id)).length >= 4, 5_000, 'the fresh run');
    await waitForRunEnd(h.db.db, schedule.id);
    expect((await eventsOf(h.db.db, server.id)).map((e) => e.event)).toEqual([
      'server:schedule.abandon',
      'server:schedule.run',
      'server:file.delete',
      'server:file.delete',
    ]);
    expect(exists('one.txt')).toBe(false);
    expect(exists('two.txt')).toBe(false);
  });

  it('leaves a run alone while another instance holds its lease', async () => {
    const { server, exists } = await serverWithFiles('two.txt');
    const schedule = await makeSchedule(h.db.db, server, {
      tasks: [
        { action: 'delete_files', payload: 'one.txt' },
        { action: 'delete_files', payload: 'two.txt' },
      ],
    });
    await interruptAfterFirstTask(schedule.id, DEAD_ELSEWHERE, Date.now() + 60_000, Date.now() - 1);
    const scheduler = h.scheduler();
    await scheduler.tick();
    await scheduler.idle();
    expect(exists('two.txt')).toBe(true);
    expect(await eventsOf(h.db.db, server.id)).toEqual([]);
    expect((await scheduleRow(h.db.db, schedule.id)).claimed_by).toBe(DEAD_ELSEWHERE);
  });

  it('stops a run cancelled by toggling is_active (the escape hatch) before its next task', async () => {
    const { owner, server, exists } = await serverWithFiles('one.txt', 'two.txt');
    const schedule = await makeSchedule(h.db.db, server, {
      nextRunAt: Date.now() - 1,
      tasks: [
        { action: 'delete_files', payload: 'one.txt' },
        { action: 'delete_files', payload: 'two.txt', offset: 1 },
      ],
    });
    h.scheduler();
    await waitFor(() => !exists('one.txt'), 5_000, 'first task');
    const res = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid_short}/schedules/${schedule.id}`,
      payload: { is_active: false },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().attributes.is_processing).toBe(false);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(exists('two.txt')).toBe(true);
    const tasks = await h.db.db.selectFrom('tasks').select('is_queued').where('schedule_id', '=', schedule.id).execute();
    expect(tasks.map((t) => t.is_queued)).toEqual([0, 0]);
  });

  it('hands unfinished runs over at stop; another instance resumes them', async () => {
    const { server, exists } = await serverWithFiles('one.txt', 'two.txt');
    const schedule = await makeSchedule(h.db.db, server, {
      nextRunAt: Date.now() - 1,
      tasks: [
        { action: 'delete_files', payload: 'one.txt' },
        { action: 'delete_files', payload: 'two.txt', offset: 1 },
      ],
    });
    const first = h.scheduler();
    await waitFor(() => !exists('one.txt'), 5_000, 'first task');
    await first.stop();
    const handedOver = await scheduleRow(h.db.db, schedule.id);
    expect(handedOver.is_processing).toBe(1);
    expect(handedOver.run_cursor).toBe(1);
    expect(handedOver.lease_expires_at).toBeLessThan(Date.now());

    const second = h.scheduler();
    await second.tick();
    await waitForRunEnd(h.db.db, schedule.id);
    expect(exists('two.txt')).toBe(false);
    expect((await eventsOf(h.db.db, server.id)).map((e) => e.event)).toEqual([
      'server:schedule.run',
      'server:file.delete',
      'server:schedule.resume',
      'server:file.delete',
    ]);
  });

  it('two schedulers run each due schedule exactly once', async () => {
    const { server } = await h.make.ownedServer();
    const now = Date.now();
    const ids: number[] = [];
    for (let i = 0; i < 40; i++) {
      const s = await makeSchedule(h.db.db, server, {
        nextRunAt: now - 1,
        tasks: [{ action: 'delete_files', payload: `f${i}` }],
      });
      ids.push(s.id);
    }
    // PostgreSQL: a pool of its own, as another process would have. SQLite: the same
    // connection — two better-sqlite3 connections in one thread would block each other
    // in SQLite's busy handler (the crash test covers separate processes on one file).
    const other = database.name === 'postgres' ? openDatabase(h.db.url, { poolSize: 3 }) : undefined;
    try {
      const a = h.scheduler({ batchSize: 7 });
      const b = startScheduler({ ...h.deps, db: other?.db ?? h.deps.db, clock: systemClock, batchSize: 5 });
      await Promise.all([a.tick(), b.tick()]);
      await waitFor(
        async () =>
          (await h.db.db.selectFrom('schedules').select('id').where('id', 'in', ids).where('last_run_at', 'is', null).execute())
            .length === 0,
        10_000,
        'all runs',
      );
      await Promise.all([a.idle(), b.idle()]);
      await b.stop();
    } finally {
      await other?.close();
    }
    const runs = (await eventsOf(h.db.db, server.id)).filter((e) => e.event === 'server:schedule.run');
    expect(runs).toHaveLength(40);
    expect((await eventsOf(h.db.db, server.id)).filter((e) => e.event === 'server:file.delete')).toHaveLength(40);
  });
});
