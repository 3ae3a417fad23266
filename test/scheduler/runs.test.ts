import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { ServerEvents, type ServerEvent } from '../../src/server-events.js';
import { describeEachDatabase } from '../helpers/databases.js';
import {
  ECHO_STARTUP,
  eventsOf,
  makeSchedule,
  readLog,
  scheduleRow,
  useSchedulerHarness,
  waitFor,
  waitForRunEnd,
} from './helpers.js';

/**
 * Runs carried out by an in-process scheduler against real child processes
 * (the echo fixture as each server's startup command): the task actions, the
 * run rules of docs/reference/schedules.md#running-schedules and the events they log.
 */
describeEachDatabase('scheduler runs', (database) => {
  const h = useSchedulerHarness(database);

  async function runningServer(opts: { backupLimit?: number } = {}) {
    const { owner, server } = await h.make.ownedServer({ startup: ECHO_STARTUP, stopCommand: 'stop', ...opts });
    await h.daemon.power({ uuid: server.uuid, startup: server.startup, stopCommand: server.stop_command }, 'start');
    await waitFor(
      async () =>
        (await h.daemon.state({ uuid: server.uuid, startup: server.startup, stopCommand: server.stop_command })) === 'running',
      5_000,
      'server running',
    );
    return { owner, server };
  }

  const systemEvents = async (serverId: number) =>
    (await eventsOf(h.db.db, serverId)).map(({ event, properties, actor_id, ip }) => ({ event, properties, actor_id, ip }));

  it('runs a due command task: the line reaches the console, events are logged by the system', async () => {
    const { server } = await runningServer();
    const before = Date.now();
    const schedule = await makeSchedule(h.db.db, server, {
      name: 'say hello',
      cron: '*/5 * * * *',
      nextRunAt: before - 1_000,
      tasks: [{ action: 'command', payload: 'hello from the scheduler' }],
    });
    const scheduler = h.scheduler();
    await scheduler.tick();
    const row = await waitForRunEnd(h.db.db, schedule.id);
    await waitFor(() => readLog(h.dataDir, server).includes('hello from the scheduler'), 5_000, 'echo in the log');

    expect(row.is_processing).toBe(0);
    expect(row.last_run_at).toBeGreaterThanOrEqual(before);
    // The next match of */5 after the run started, not the missed time.
    expect(row.next_run_at).toBeGreaterThan(before);
    expect(new Date(row.next_run_at!).getUTCMinutes() % 5).toBe(0);
    expect(row.claimed_by).toBeNull();
    expect(await systemEvents(server.id)).toEqual([
      { event: 'server:schedule.run', properties: { name: 'say hello' }, actor_id: null, ip: null },
      { event: 'server:console.command', properties: { command: 'hello from the scheduler' }, actor_id: null, ip: null },
    ]);
    const tasks = await h.db.db.selectFrom('tasks').selectAll().where('schedule_id', '=', schedule.id).execute();
    expect(tasks.every((t) => t.is_queued === 0)).toBe(true);
  });

  it('runs power tasks through the daemon and logs server:power.<signal>', async () => {
    const { server } = await h.make.ownedServer({ startup: ECHO_STARTUP, stopCommand: 'stop' });
    const target = { uuid: server.uuid, startup: server.startup, stopCommand: server.stop_command };
    const schedule = await makeSchedule(h.db.db, server, {
      nextRunAt: Date.now() - 1,
      tasks: [
        { action: 'power', payload: 'start' },
        { action: 'command', payload: 'started by a schedule' },
      ],
    });
    h.scheduler();
    await waitForRunEnd(h.db.db, schedule.id);
    expect(await h.daemon.state(target)).toMatch(/running|starting/);
    await waitFor(() => readLog(h.dataDir, server).includes('started by a schedule'), 5_000, 'echo in the log');
    expect((await systemEvents(server.id)).map((e) => e.event)).toEqual([
      'server:schedule.run',
      'server:power.start',
      'server:console.command',
    ]);

    const stop = await makeSchedule(h.db.db, server, {
      nextRunAt: Date.now() - 1,
      tasks: [{ action: 'power', payload: 'stop' }],
    });
    h.scheduler();
    await waitForRunEnd(h.db.db, stop.id);
    expect(await h.daemon.state(target)).toBe('offline');
    expect((await systemEvents(server.id)).slice(-1)[0]).toEqual({
      event: 'server:power.stop',
      properties: {},
      actor_id: null,
      ip: null,
    });
  });

  it('skips an only_when_online run while the server is offline: no event, last_run_at unchanged, next time moves on', async () => {
    const { server: offline } = await h.make.ownedServer({ startup: ECHO_STARTUP, stopCommand: 'stop' });
    const { server: online } = await runningServer();
    const now = Date.now();
    const skipped = await makeSchedule(h.db.db, offline, {
      cron: '* * * * *',
      onlyWhenOnline: true,
      nextRunAt: now - 1,
      tasks: [{ action: 'delete_files', payload: 'never.txt' }],
    });
    const ran = await makeSchedule(h.db.db, online, {
      onlyWhenOnline: true,
      nextRunAt: now - 1,
      tasks: [{ action: 'command', payload: 'online only' }],
    });
    const scheduler = h.scheduler();
    await scheduler.tick();
    await waitForRunEnd(h.db.db, ran.id);

    const row = await scheduleRow(h.db.db, skipped.id);
    expect(row.is_processing).toBe(0);
    expect(row.last_run_at).toBeNull();
    expect(row.next_run_at).toBeGreaterThan(now);
    expect(await systemEvents(offline.id)).toEqual([]);
    expect((await systemEvents(online.id)).map((e) => e.event)).toEqual(['server:schedule.run', 'server:console.command']);
  });

  it('stops at a failing task unless it continues on failure', async () => {
    const { server } = await h.make.ownedServer({ startup: ECHO_STARTUP, stopCommand: 'stop' });
    const volume = h.daemon.volumeDir(server.uuid);
    fs.writeFileSync(path.join(volume, 'a.txt'), 'a');
    fs.writeFileSync(path.join(volume, 'b.txt'), 'b');
    // The server is offline: the command tasks fail (the daemon refuses console lines).
    const stops = await makeSchedule(h.db.db, server, {
      name: 'stops',
      nextRunAt: Date.now() - 1,
      tasks: [
        { action: 'command', payload: 'fails' },
        { action: 'delete_files', payload: 'a.txt' },
      ],
    });
    const continues = await makeSchedule(h.db.db, server, {
      name: 'continues',
      nextRunAt: Date.now() - 1,
      tasks: [
        { action: 'command', payload: 'fails too', continueOnFailure: true },
        { action: 'delete_files', payload: 'b.txt' },
      ],
    });
    h.scheduler();
    const stopped = await waitForRunEnd(h.db.db, stops.id);
    await waitForRunEnd(h.db.db, continues.id);

    expect(fs.existsSync(path.join(volume, 'a.txt'))).toBe(true);
    expect(fs.existsSync(path.join(volume, 'b.txt'))).toBe(false);
    expect(stopped.last_run_at).not.toBeNull();
    const events = await systemEvents(server.id);
    expect(events.filter((e) => e.event === 'server:schedule.run')).toHaveLength(2);
    expect(events.filter((e) => e.event === 'server:console.command')).toEqual([]);
    expect(events.filter((e) => e.event === 'server:file.delete')).toEqual([
      { event: 'server:file.delete', properties: { files: ['b.txt'] }, actor_id: null, ip: null },
    ]);
    const tasks = await h.db.db
      .selectFrom('tasks')
      .select('is_queued')
      .where('schedule_id', 'in', [stops.id, continues.id])
      .execute();
    expect(tasks.every((t) => t.is_queued === 0)).toBe(true);
  });

  it('waits each time_offset after the previous task finished, with the waiting task queued', async () => {
    const { server } = await runningServer();
    const schedule = await makeSchedule(h.db.db, server, {
      nextRunAt: Date.now() - 1,
      tasks: [
        { action: 'command', payload: 'first' },
        { action: 'command', payload: 'second', offset: 1 },
        { action: 'command', payload: 'third', offset: 1 },
      ],
    });
    h.scheduler();
    // While the second task waits: the run is processing and that task is queued.
    await waitFor(
      async () => (await eventsOf(h.db.db, server.id)).some((e) => e.event === 'server:console.command'),
      5_000,
      'first command',
    );
    const waiting = await h.db.db
      .selectFrom('tasks')
      .selectAll()
      .where('schedule_id', '=', schedule.id)
      .orderBy('sequence_id')
      .execute();
    expect(waiting.map((t) => t.is_queued)).toEqual([0, 1, 0]);
    expect((await scheduleRow(h.db.db, schedule.id)).is_processing).toBe(1);
    expect(readLog(h.dataDir, server)).not.toContain('second');

    await waitForRunEnd(h.db.db, schedule.id, 8_000);
    await waitFor(() => readLog(h.dataDir, server).includes('third'), 5_000, 'third command');
    const commands = (await eventsOf(h.db.db, server.id)).filter((e) => e.event === 'server:console.command');
    expect(commands.map((e) => e.properties.command)).toEqual(['first', 'second', 'third']);
    expect(commands[1]!.timestamp - commands[0]!.timestamp).toBeGreaterThanOrEqual(1_000);
    expect(commands[2]!.timestamp - commands[1]!.timestamp).toBeGreaterThanOrEqual(1_000);
    expect(commands[2]!.timestamp - commands[0]!.timestamp).toBeLessThan(3_500);
  });

  it('does not run schedules of a server that is restoring a backup, suspended or installing', async () => {
    const scheduler = h.scheduler();
    const now = Date.now();
    for (const status of ['restoring_backup', 'suspended', 'installing'] as const) {
      const { server } = await h.make.ownedServer({ status });
      const volume = h.daemon.volumeDir(server.uuid);
      fs.writeFileSync(path.join(volume, 'keep.txt'), 'x');
      const schedule = await makeSchedule(h.db.db, server, {
        cron: '* * * * *',
        nextRunAt: now - 1,
        tasks: [{ action: 'delete_files', payload: 'keep.txt' }],
      });
      await scheduler.tick();
      const row = await scheduleRow(h.db.db, schedule.id);
      expect(row.is_processing).toBe(0);
      expect(row.last_run_at).toBeNull();
      // The time passed while the server was not ready is skipped (docs/reference/servers.md#status), not kept due.
      expect(row.next_run_at).toBeGreaterThan(now);
      expect(await eventsOf(h.db.db, server.id)).toEqual([]);
      expect(fs.existsSync(path.join(volume, 'keep.txt'))).toBe(true);
    }
  });

  it('ignores inactive schedules, schedules without tasks and schedules not yet due', async () => {
    const { server } = await h.make.ownedServer();
    const now = Date.now();
    const inactive = await makeSchedule(h.db.db, server, {
      active: false,
      nextRunAt: now - 1,
      tasks: [{ action: 'delete_files', payload: 'x' }],
    });
    const empty = await makeSchedule(h.db.db, server, { cron: '* * * * *', nextRunAt: now - 1 });
    const later = await makeSchedule(h.db.db, server, {
      nextRunAt: now + 60_000,
      tasks: [{ action: 'delete_files', payload: 'x' }],
    });
    const scheduler = h.scheduler();
    await scheduler.tick();
    await scheduler.idle();
    expect(await eventsOf(h.db.db, server.id)).toEqual([]);
    expect((await scheduleRow(h.db.db, inactive.id)).next_run_at).toBe(now - 1);
    expect((await scheduleRow(h.db.db, empty.id)).next_run_at).toBeGreaterThan(now);
    expect((await scheduleRow(h.db.db, later.id)).next_run_at).toBe(now + 60_000);
  });

  it('runs a schedule missed for many minutes once, and counts the next time from now', async () => {
    const { server } = await h.make.ownedServer();
    const now = Date.now();
    const schedule = await makeSchedule(h.db.db, server, {
      cron: '* * * * *',
      nextRunAt: now - 30 * 60_000,
      tasks: [{ action: 'delete_files', payload: 'nothing-here.txt' }],
    });
    const scheduler = h.scheduler();
    await scheduler.tick();
    const row = await waitForRunEnd(h.db.db, schedule.id);
    await scheduler.tick();
    await scheduler.idle();
    const runs = (await eventsOf(h.db.db, server.id)).filter((e) => e.event === 'server:schedule.run');
    expect(runs).toHaveLength(1);
    expect(row.next_run_at).toBeGreaterThan(now);
    expect(row.next_run_at! - now).toBeLessThanOrEqual(60_000);
  });

  it('starts a run within a second of next_run_at without being woken', async () => {
    const { server } = await h.make.ownedServer();
    const dueAt = Date.now() + 1_200;
    const schedule = await makeSchedule(h.db.db, server, {
      nextRunAt: dueAt,
      tasks: [{ action: 'delete_files', payload: 'x.txt' }],
    });
    // A long fallback poll: only the sleeper's own timer can start this run in time.
    h.scheduler({ pollIntervalMs: 60_000 });
    await waitForRunEnd(h.db.db, schedule.id, 5_000);
    const run = (await eventsOf(h.db.db, server.id)).find((e) => e.event === 'server:schedule.run')!;
    expect(run.timestamp).toBeGreaterThanOrEqual(dueAt);
    expect(run.timestamp - dueAt).toBeLessThan(1_000);
  });

  it('deletes files inside the volume and refuses paths outside it', async () => {
    const { server } = await h.make.ownedServer();
    const volume = h.daemon.volumeDir(server.uuid);
    fs.mkdirSync(path.join(volume, 'logs'), { recursive: true });
    fs.writeFileSync(path.join(volume, 'logs', 'old.log'), 'x');
    fs.writeFileSync(path.join(volume, 'cache.bin'), 'x');
    const outside = path.join(path.dirname(volume), `outside-${server.uuid}.txt`);
    fs.writeFileSync(outside, 'keep');
    const schedule = await makeSchedule(h.db.db, server, {
      nextRunAt: Date.now() - 1,
      tasks: [
        { action: 'delete_files', payload: 'logs/old.log\n\ncache.bin\n' },
        // Stored behind the API's back: the daemon must still refuse it.
        { action: 'delete_files', payload: `../outside-${server.uuid}.txt` },
      ],
    });
    h.scheduler();
    await waitForRunEnd(h.db.db, schedule.id);
    expect(fs.existsSync(path.join(volume, 'logs', 'old.log'))).toBe(false);
    expect(fs.existsSync(path.join(volume, 'cache.bin'))).toBe(false);
    expect(fs.readFileSync(outside, 'utf8')).toBe('keep');
    const deletes = (await eventsOf(h.db.db, server.id)).filter((e) => e.event === 'server:file.delete');
    expect(deletes.map((e) => e.properties)).toEqual([{ files: ['logs/old.log', 'cache.bin'] }]);
    fs.rmSync(outside, { force: true });
  });

  it('creates backups through the backups service and fails the task at the backup limit', async () => {
    const { server } = await h.make.ownedServer({ backupLimit: 1 });
    const volume = h.daemon.volumeDir(server.uuid);
    fs.writeFileSync(path.join(volume, 'world.dat'), 'data');
    fs.writeFileSync(path.join(volume, 'debug.log'), 'noise');
    const schedule = await makeSchedule(h.db.db, server, {
      nextRunAt: Date.now() - 1,
      tasks: [{ action: 'backup', payload: '*.log' }, { action: 'backup' }, { action: 'delete_files', payload: 'world.dat' }],
    });
    // Live consoles hear of a backup a task made, as of one made through the API (docs/reference/power-and-console.md#websocket).
    const serverEvents = new ServerEvents();
    const heard: ServerEvent[] = [];
    serverEvents.subscribe((event) => heard.push(event));
    h.scheduler({ serverEvents });
    await waitForRunEnd(h.db.db, schedule.id);
    const backups = await h.db.db.selectFrom('backups').selectAll().where('server_id', '=', server.id).execute();
    expect(backups).toHaveLength(1);
    expect(backups[0]!.is_successful).toBe(1);
    expect(heard).toEqual([
      expect.objectContaining({
        type: 'backup-completed',
        serverUuid: server.uuid,
        backupUuid: backups[0]!.uuid,
        successful: true,
      }),
    ]);
    expect(JSON.parse(backups[0]!.ignored_files)).toEqual(['*.log']);
    // The second backup hit the limit: the run stopped before deleting anything.
    expect(fs.existsSync(path.join(volume, 'world.dat'))).toBe(true);
    expect((await eventsOf(h.db.db, server.id)).map((e) => [e.event, e.actor_id])).toEqual([
      ['server:schedule.run', null],
      ['server:backup.start', null],
      ['server:backup.complete', null],
    ]);
  });
});
