import { expect, it } from 'vitest';
import type { CliContext, CliOptions } from '../../src/cli/command.js';
import { command as serverCreate } from '../../src/cli/commands/server-create.js';
import { daemonServer, serverLimits } from '../../src/modules/servers/servers.service.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { describeEachDialect, quetzal, quetzalJson, useSandbox } from './helpers.js';

/**
 * `server:create --memory MiB --cpu PERCENT --disk MiB --pids N` (docs/reference/containment.md,
 * docs/reference/cli.md): the limits are stored on the server row, default to none, and
 * a bad value is refused with the flag and the value named.
 */

const SPAWN_TIMEOUT_MS = 120_000;

describeEachDatabase('server:create limits', (database) => {
  const h = useHarness(database);
  const ctx = (): CliContext => ({ config: h.config, database: h.db, daemon: h.daemon, clock: h.clock });
  const run = (options: CliOptions) => serverCreate.run(ctx(), options);
  const stored = (uuid: unknown) =>
    h.db.db
      .selectFrom('servers')
      .select(['memory_mib', 'cpu_percent', 'disk_mib', 'pids'])
      .where('uuid', '=', uuid as string)
      .executeTakeFirstOrThrow();

  it('stores each flag, and the daemon is given them', async () => {
    const { user } = await h.make.user();
    const created = await run({ owner: user.username, name: 'limited', memory: '1024', cpu: '150', disk: '4096', pids: '64' });
    expect(Object.keys(created).sort()).toEqual(['identifier', 'name', 'uuid']);
    const row = await stored(created.uuid);
    expect(row).toEqual({ memory_mib: 1024, cpu_percent: 150, disk_mib: 4096, pids: 64 });
    expect(serverLimits(row)).toEqual({ memoryMiB: 1024, cpuPercent: 150, diskMiB: 4096, pids: 64 });
    const server = await h.db.db
      .selectFrom('servers')
      .selectAll()
      .where('uuid', '=', created.uuid as string)
      .executeTakeFirstOrThrow();
    expect(daemonServer(server).limits).toEqual({ memoryMiB: 1024, cpuPercent: 150, diskMiB: 4096, pids: 64 });
  });

  it('defaults to no limits: 0 for memory, cpu and disk, null (the daemon default) for pids', async () => {
    const { user } = await h.make.user();
    const created = await run({ owner: user.username, name: 'open' });
    expect(await stored(created.uuid)).toEqual({ memory_mib: 0, cpu_percent: 0, disk_mib: 0, pids: null });
    const some = await run({ owner: user.username, name: 'some', cpu: '50' });
    expect(await stored(some.uuid)).toEqual({ memory_mib: 0, cpu_percent: 50, disk_mib: 0, pids: null });
    const unlimited = await run({ owner: user.username, name: 'unlimited pids', pids: '0' });
    expect(await stored(unlimited.uuid)).toEqual({ memory_mib: 0, cpu_percent: 0, disk_mib: 0, pids: 0 });
  });

  it('takes each bound exactly', async () => {
    const { user } = await h.make.user();
    const created = await run({
      owner: user.username,
      name: 'bounds',
      memory: '2147483647',
      cpu: '100000',
      disk: '2147483647',
      pids: '4194304',
    });
    expect(await stored(created.uuid)).toEqual({
      memory_mib: 2147483647,
      cpu_percent: 100000,
      disk_mib: 2147483647,
      pids: 4194304,
    });
  });

  it('--inodes is stored (0 = unlimited); without it the column is null, the default of 1 per 4 KiB of disk', async () => {
    const { user } = await h.make.user();
    const inodes = async (uuid: unknown) =>
      (
        await h.db.db
          .selectFrom('servers')
          .select('inodes')
          .where('uuid', '=', uuid as string)
          .executeTakeFirstOrThrow()
      ).inodes;
    const some = await run({ owner: user.username, name: 'inodes', disk: '100', inodes: '5000' });
    expect(await inodes(some.uuid)).toBe(5000);
    const row = await h.db.db
      .selectFrom('servers')
      .selectAll()
      .where('uuid', '=', some.uuid as string)
      .executeTakeFirstOrThrow();
    expect(daemonServer(row).limits).toEqual({ memoryMiB: 0, cpuPercent: 0, diskMiB: 100, pids: null, inodes: 5000 });
    expect(await inodes((await run({ owner: user.username, name: 'none', inodes: '0' })).uuid)).toBe(0);
    expect(await inodes((await run({ owner: user.username, name: 'default' })).uuid)).toBeNull();
  });

  it('refuses anything but a whole number within bounds, naming the flag and the value, and creates nothing', async () => {
    const { user } = await h.make.user();
    const base = { owner: user.username, name: 'refused' };
    const cases: [string, string, number][] = [
      ['memory', '2147483648', 2147483647],
      ['cpu', '100001', 100000],
      ['disk', '99999999999999999999', 2147483647],
      ['pids', '4194305', 4194304],
      ['inodes', '2147483648', 2147483647],
    ];
    for (const [flag, tooBig, max] of cases) {
      for (const value of ['-1', '1.5', 'ten', '1e3', '0x10', '+5', tooBig]) {
        await expect(run({ ...base, [flag]: value }), `--${flag} ${value}`).rejects.toThrow(
          `--${flag} must be a whole number from 0 to ${max}`,
        );
        await expect(run({ ...base, [flag]: value })).rejects.toThrow(`got "${value}"`);
      }
      await expect(run({ ...base, [flag]: ' ' })).rejects.toThrow(`--${flag} needs a value`);
    }
    const servers = await h.db.db.selectFrom('servers').select('id').where('owner_id', '=', user.id).execute();
    expect(servers).toEqual([]);
  });
});

describeEachDialect('server:create limits on the command line', (dialect) => {
  const box = useSandbox(dialect);

  it(
    'reads the flags, lists them in the usage line, and refuses a bad value on one line',
    async () => {
      await quetzalJson(['user:create', '--username', 'alice', '--email', 'alice@example.com'], box.env);
      const created = await quetzalJson(
        [
          'server:create',
          '--owner',
          'alice',
          '--name',
          'survival',
          '--memory',
          '2048',
          '--cpu=200',
          '--disk',
          '10240',
          '--pids',
          '256',
        ],
        box.env,
      );
      expect(Object.keys(created).sort()).toEqual(['identifier', 'name', 'uuid']);
      const row = await box
        .db()
        .db.selectFrom('servers')
        .select(['memory_mib', 'cpu_percent', 'disk_mib', 'pids'])
        .where('uuid', '=', created.uuid as string)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ memory_mib: 2048, cpu_percent: 200, disk_mib: 10240, pids: 256 });

      const help = await quetzal(['server:create', '--help'], box.env);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain('[--memory MiB] [--cpu PERCENT] [--disk MiB] [--pids N]');

      const bad = await quetzal(['server:create', '--owner', 'alice', '--name', 'x', '--cpu', '12.5', '--json'], box.env);
      expect(bad.code, bad.stderr).toBe(1);
      expect(bad.stdout).toBe('');
      expect(bad.stderr.trimEnd().split('\n')).toEqual([
        expect.stringMatching(/--cpu must be a whole number from 0 to 100000 .*got "12\.5"/),
      ]);
    },
    SPAWN_TIMEOUT_MS,
  );
});
