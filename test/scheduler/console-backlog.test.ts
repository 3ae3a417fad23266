import { expect, it } from 'vitest';
import { DaemonBusyError, type DaemonServer } from '../../src/daemon/daemon.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { eventsOf, makeSchedule, useSchedulerHarness, waitForRunEnd } from './helpers.js';

/** docs/reference/backups-and-restores.md#durability: a schedule's command task meets the same 1 MiB bound as a console command sent by hand. */
describeEachDatabase('scheduled command to a server that does not read its console', (database) => {
  const h = useSchedulerHarness(database);

  /** Sends `line` until the daemon refuses it; how many it took. */
  async function fill(server: DaemonServer, line: string): Promise<number> {
    for (let sent = 0; sent < 100_000; sent++) {
      try {
        await h.daemon.sendCommand(server, line);
      } catch (err) {
        expect(err).toBeInstanceOf(DaemonBusyError);
        return sent;
      }
    }
    throw new Error('never refused');
  }

  it('fails the task (no console.command logged) instead of queueing, and the run goes on to its end', async () => {
    const { owner, server } = await h.make.ownedServer({ startup: 'exec sleep 1000' });
    const target: DaemonServer = { uuid: server.uuid, startup: server.startup, stopCommand: server.stop_command };
    await h.daemon.power(target, 'start');
    // Full to the byte: long lines first, then the shortest there is.
    expect(await fill(target, `say ${'x'.repeat(4000)}`)).toBeGreaterThan(0);
    await fill(target, '');

    const schedule = await makeSchedule(h.db.db, server, {
      tasks: [
        { action: 'command', payload: 'say hi', continueOnFailure: true },
        { action: 'delete_files', payload: 'tmp' },
      ],
    });
    const res = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid_short}/schedules/${schedule.id}/execute`,
    });
    expect(res.statusCode).toBe(202);
    await h.scheduler().tick();
    await waitForRunEnd(h.db.db, schedule.id);
    const events = (await eventsOf(h.db.db, server.id)).map((e) => e.event);
    expect(events).toContain('server:file.delete');
    expect(events).not.toContain('server:console.command');
    await expect(h.daemon.sendCommand(target, 'say hi')).rejects.toBeInstanceOf(DaemonBusyError);
    await h.daemon.power(target, 'kill');
  });
});
