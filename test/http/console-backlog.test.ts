import { afterEach, expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

/** docs/reference/backups-and-restores.md#durability: a console command for a process that does not read its input is a 409 once 1 MiB waits. */
describeEachDatabase('console backpressure', (database) => {
  const h = useHarness(database);
  afterEach(async () => {
    await h.jobs.idle();
  });

  const url = (server: ServerRow, rest: string) => `/api/client/servers/${server.uuid_short}/${rest}`;
  const LINE = `say ${'x'.repeat(4000)}`;

  it('answers 409 ConflictHttpException once 1 MiB waits, logs only the accepted commands, and queues nothing more', async () => {
    const { owner, server } = await h.make.ownedServer({ startup: 'exec sleep 1000' });
    expect(
      (await h.request(owner.token, { method: 'POST', url: url(server, 'power'), payload: { signal: 'start' } })).statusCode,
    ).toBe(204);
    await h.jobs.idle();

    let accepted = 0;
    let refused: { statusCode: number; json(): unknown } | undefined;
    while (accepted < 1000) {
      const res = await h.request(owner.token, { method: 'POST', url: url(server, 'command'), payload: { command: LINE } });
      if (res.statusCode !== 204) {
        refused = res;
        break;
      }
      accepted++;
    }
    expect(refused?.statusCode).toBe(409);
    expect(refused?.json()).toEqual({ errors: [{ code: 'ConflictHttpException', status: '409', detail: expect.any(String) }] });
    expect(accepted * (LINE.length + 1)).toBeLessThanOrEqual(1024 * 1024);
    expect(accepted * (LINE.length + 1)).toBeGreaterThan(1024 * 1024 - 64 * 1024 - LINE.length - 1);
    const logged = await h.db.db
      .selectFrom('activity_logs')
      .select('id')
      .where('server_id', '=', server.id)
      .where('event', '=', 'server:console.command')
      .execute();
    expect(logged).toHaveLength(accepted);

    const again = await h.request(owner.token, { method: 'POST', url: url(server, 'command'), payload: { command: LINE } });
    expect(again.statusCode).toBe(409);
    expect(
      (await h.request(owner.token, { method: 'POST', url: url(server, 'power'), payload: { signal: 'kill' } })).statusCode,
    ).toBe(204);
  });
});
