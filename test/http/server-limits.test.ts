import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

/**
 * The server object's `limits` (docs/reference/containment.md): Pterodactyl's shape with the values
 * stored by `server:create`, no extra members (docs/DECISIONS.md "Server
 * limits in the server object").
 */
describeEachDatabase('server limits in the server object', (database) => {
  const h = useHarness(database);

  it('shows the stored limits to the owner, by UUID and by short identifier', async () => {
    const { owner, server } = await h.make.ownedServer({
      backupLimit: 3,
      limits: { memoryMiB: 2048, cpuPercent: 250, diskMiB: 10240, pids: 128 },
    });
    for (const ref of [server.uuid, server.uuid_short]) {
      const res = await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${ref}` });
      expect(res.statusCode).toBe(200);
      const attributes = res.json().attributes;
      expect(attributes.limits).toStrictEqual({
        memory: 2048,
        swap: 0,
        disk: 10240,
        io: 500,
        cpu: 250,
        threads: null,
        oom_disabled: false,
      });
      expect(attributes.feature_limits).toStrictEqual({ databases: 0, allocations: 0, backups: 3 });
    }
  });

  it('shows 0 (unlimited) for a server created without limits', async () => {
    const { owner, server } = await h.make.ownedServer();
    const res = await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid}` });
    expect(res.statusCode).toBe(200);
    expect(res.json().attributes.limits).toStrictEqual({
      memory: 0,
      swap: 0,
      disk: 0,
      io: 500,
      cpu: 0,
      threads: null,
      oom_disabled: false,
    });
  });

  it('shows the same limits to a subuser and in the listing', async () => {
    const { owner, server } = await h.make.ownedServer({ limits: { memoryMiB: 512, cpuPercent: 100 } });
    const sub = await h.make.subuser(server, ['control.console']);
    const expected = { memory: 512, swap: 0, disk: 0, io: 500, cpu: 100, threads: null, oom_disabled: false };

    const seen = await h.request(sub.token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}` });
    expect(seen.statusCode).toBe(200);
    expect(seen.json().attributes.limits).toStrictEqual(expected);

    const list = await h.request(owner.token, { method: 'GET', url: '/api/client' });
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((s: { attributes: { limits: unknown } }) => s.attributes.limits)).toStrictEqual([expected]);
  });
});
