import { expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { openDatabase } from '../../src/db/database.js';
import { startScheduler } from '../../src/scheduler/scheduler.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { eventsOf, makeSchedule, scheduleRow, useSchedulerHarness, waitFor, waitForRunEnd } from './helpers.js';

/** POST /servers/{server}/schedules/{schedule}/execute (docs/reference/schedules.md#running-schedules). */
describeEachDatabase('schedule execute', (database) => {
  const h = useSchedulerHarness(database);
  const url = (server: { uuid_short: string }, id: number) => `/api/client/servers/${server.uuid_short}/schedules/${id}/execute`;

  it('answers 202 with an empty body, logs the request for the user, then the run for the system — inactive or not', async () => {
    const { owner, server } = await h.make.ownedServer();
    const staleNext = Date.now() - 86_400_000;
    const schedule = await makeSchedule(h.db.db, server, {
      name: 'by hand',
      active: false,
      cron: '0 4 * * *',
      nextRunAt: staleNext,
      tasks: [{ action: 'delete_files', payload: 'tmp' }],
    });
    const res = await h.request(owner.token, { method: 'POST', url: url(server, schedule.id) });
    expect(res.statusCode).toBe(202);
    expect(res.body).toBe('');
    const requested = await scheduleRow(h.db.db, schedule.id);
    expect(requested.run_requested_at).toBe(h.clock.now());

    const scheduler = h.scheduler();
    await scheduler.tick();
    const row = await waitForRunEnd(h.db.db, schedule.id);
    expect(row.run_requested_at).toBeNull();
    expect(row.is_active).toBe(0);
    // A manual run counts next_run_at from now like any run start: the stale value is refreshed.
    expect(row.next_run_at).toBeGreaterThan(Date.now());
    const events = await eventsOf(h.db.db, server.id);
    expect(events.map((e) => ({ event: e.event, properties: e.properties, actor_id: e.actor_id, ip: e.ip }))).toEqual([
      { event: 'server:schedule.execute', properties: { name: 'by hand' }, actor_id: owner.user.id, ip: '127.0.0.1' },
      { event: 'server:schedule.run', properties: { name: 'by hand' }, actor_id: null, ip: null },
      { event: 'server:file.delete', properties: { files: ['tmp'] }, actor_id: null, ip: null },
    ]);
  });

  it('is a 400 DisplayException for a schedule without tasks', async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await makeSchedule(h.db.db, server);
    const res = await h.request(owner.token, { method: 'POST', url: url(server, schedule.id), payload: {} });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0]).toMatchObject({ code: 'DisplayException', status: '400' });
    expect(await eventsOf(h.db.db, server.id)).toEqual([]);
    expect((await scheduleRow(h.db.db, schedule.id)).run_requested_at).toBeNull();
  });

  it('is a 409 while a run is requested or processing, and when the server is not ready', async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await makeSchedule(h.db.db, server, { tasks: [{ action: 'delete_files', payload: 'x' }] });
    // No scheduler runs here: the first request stays pending.
    expect((await h.request(owner.token, { method: 'POST', url: url(server, schedule.id) })).statusCode).toBe(202);
    const again = await h.request(owner.token, { method: 'POST', url: url(server, schedule.id) });
    expect(again.statusCode).toBe(409);
    expect(again.json().errors[0].code).toBe('ConflictHttpException');

    const busy = await makeSchedule(h.db.db, server, { tasks: [{ action: 'delete_files', payload: 'x' }] });
    await h.db.db.updateTable('schedules').set({ is_processing: 1 }).where('id', '=', busy.id).execute();
    expect((await h.request(owner.token, { method: 'POST', url: url(server, busy.id) })).statusCode).toBe(409);

    for (const status of ['restoring_backup', 'suspended', 'installing'] as const) {
      const { owner: o, server: s } = await h.make.ownedServer({ status });
      const sch = await makeSchedule(h.db.db, s, { tasks: [{ action: 'delete_files', payload: 'x' }] });
      const res = await h.request(o.token, { method: 'POST', url: url(s, sch.id) });
      expect(res.statusCode).toBe(409);
      expect((await scheduleRow(h.db.db, sch.id)).run_requested_at).toBeNull();
    }
    expect((await eventsOf(h.db.db, server.id)).map((e) => e.event)).toEqual(['server:schedule.execute']);
  });

  it('accepts exactly one of two concurrent requests', async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await makeSchedule(h.db.db, server, { tasks: [{ action: 'delete_files', payload: 'x' }] });
    const answers = await Promise.all(
      [1, 2, 3].map(() => h.request(owner.token, { method: 'POST', url: url(server, schedule.id) })),
    );
    expect(answers.map((r) => r.statusCode).sort()).toEqual([202, 409, 409]);
  });

  it('needs schedule.update (403), and hides other servers\u2019 schedules (404)', async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await makeSchedule(h.db.db, server, { tasks: [{ action: 'delete_files', payload: 'x' }] });
    const reader = await h.make.subuser(server, ['schedule.read']);
    const denied = await h.request(reader.token, { method: 'POST', url: url(server, schedule.id) });
    expect(denied.statusCode).toBe(403);
    const updater = await h.make.subuser(server, ['schedule.update']);
    expect((await h.request(updater.token, { method: 'POST', url: url(server, schedule.id) })).statusCode).toBe(202);

    const { server: other } = await h.make.ownedServer();
    const foreign = await makeSchedule(h.db.db, other, { tasks: [{ action: 'delete_files', payload: 'x' }] });
    expect((await h.request(owner.token, { method: 'POST', url: url(server, foreign.id) })).statusCode).toBe(404);
    expect((await h.request(null, { method: 'POST', url: url(server, schedule.id) })).statusCode).toBe(401);
  });

  it('is run by a scheduler in another process (SCHEDULER=off here), woken without waiting for its poll', async () => {
    const { owner, server } = await h.make.ownedServer();
    const schedule = await makeSchedule(h.db.db, server, { tasks: [{ action: 'delete_files', payload: 'x' }] });
    // Another "process", never woken by this app. On PostgreSQL it has its own pool and
    // only NOTIFY can wake it within the test (its poll is a minute). SQLite has no such
    // channel: there its fallback poll (shortened here) picks the request up; it shares
    // the connection, because two better-sqlite3 connections in one thread would block
    // each other in SQLite's busy handler (the crash test covers separate processes).
    const other = database.name === 'postgres' ? openDatabase(h.db.url, { poolSize: 2 }) : undefined;
    const remote = startScheduler({
      ...h.deps,
      db: other?.db ?? h.deps.db,
      clock: systemClock,
      pollIntervalMs: database.name === 'postgres' ? 60_000 : 300,
    });
    try {
      await remote.tick(); // connected and asleep
      const sent = Date.now();
      expect((await h.request(owner.token, { method: 'POST', url: url(server, schedule.id) })).statusCode).toBe(202);
      await waitForRunEnd(h.db.db, schedule.id, 5_000);
      expect(Date.now() - sent).toBeLessThan(2_000);
      await remote.idle();
    } finally {
      await remote.stop();
      await other?.close();
    }
    await waitFor(async () => (await eventsOf(h.db.db, server.id)).length === 3, 2_000, 'events');
  });
});
