import { describe, expect, it } from 'vitest';
import type { CliContext, CliOptions } from '../../src/cli/command.js';
import { command as serverUpdate } from '../../src/cli/commands/server-update.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { quetzal, quetzalJson, useSandbox } from './helpers.js';

/**
 * `server:update --server S ...` (docs/reference/cli.md, docs/reference/eggs-and-installs.md): each flag lands in
 * its column, validated as server:create validates it; a bad value or an
 * unknown image changes nothing.
 */
describeEachDatabase('server:update', (database) => {
  const h = useHarness(database);
  const ctx = (): CliContext => ({ config: h.config, database: h.db, daemon: h.daemon, clock: h.clock });
  const run = (options: CliOptions) => serverUpdate.run(ctx(), options);
  const row = (id: number) => h.db.db.selectFrom('servers').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it('writes every flag given and leaves the others alone', async () => {
    const { server } = await h.make.ownedServer({ name: 'old', startup: 'echo old', limits: { memoryMiB: 512, pids: 64 } });
    const result = await run({
      server: server.uuid_short,
      name: 'new name',
      startup: 'echo new {{SERVER_MEMORY}}',
      'stop-command': 'stop',
      image: 'host',
      memory: '2048',
      cpu: '150',
      disk: '4096',
      inodes: '10000',
      'allocation-limit': '3',
      'backup-limit': '0',
    });
    expect(result).toEqual({ uuid: server.uuid, identifier: server.uuid_short, name: 'new name' });
    expect(await row(server.id)).toMatchObject({
      name: 'new name',
      startup: 'echo new {{SERVER_MEMORY}}',
      stop_command: 'stop',
      image: 'host',
      memory_mib: 2048,
      cpu_percent: 150,
      disk_mib: 4096,
      pids: 64,
      inodes: 10000,
      allocation_limit: 3,
      backup_limit: 0,
    });
    await run({ server: server.uuid, pids: '0' });
    expect(await row(server.id)).toMatchObject({ name: 'new name', memory_mib: 2048, pids: 0 });
  });

  it('refuses bad values, an unknown image, an unknown server and nothing to do, changing nothing', async () => {
    const { server } = await h.make.ownedServer({ name: 'kept', limits: { memoryMiB: 512 } });
    const before = await row(server.id);
    const bad: [CliOptions, RegExp][] = [
      [{ server: server.uuid_short, name: 'x'.repeat(192) }, /--name must be at most 191/],
      [{ server: server.uuid_short, name: 'ok', memory: '-1' }, /--memory must be a whole number/],
      [{ server: server.uuid_short, cpu: '12.5' }, /--cpu must be a whole number/],
      [{ server: server.uuid_short, 'backup-limit': 'many' }, /--backup-limit must be a whole number/],
      [{ server: server.uuid_short, 'allocation-limit': '-3' }, /--allocation-limit must be a whole number/],
      [{ server: server.uuid_short, 'stop-command': 'a\nb' }, /single line/],
      [{ server: server.uuid_short, name: 'other', image: 'ghcr.io/none:latest' }, /No image named "ghcr.io\/none:latest"/],
      [{ server: 'ffffffff', name: 'x' }, /No server matches/],
      [{ server: server.uuid_short }, /Nothing to update/],
    ];
    for (const [options, message] of bad) await expect(run(options), JSON.stringify(options)).rejects.toThrow(message);
    expect(await row(server.id)).toEqual(before);
  });
});

// The binary's own path once (its spawns are slow); both databases are covered above.
describe('server:update on the command line', () => {
  const box = useSandbox('sqlite');

  it('prints uuid, identifier and name; a bad flag exits 1 with one line on stderr', async () => {
    await quetzalJson(['user:create', '--username', 'alice', '--email', 'alice@example.com'], box.env);
    const created = await quetzalJson(['server:create', '--owner', 'alice', '--name', 'typo', '--startup', 'ech hello'], box.env);
    const updated = await quetzalJson(['server:update', '--server', created.identifier, '--startup', 'echo hello'], box.env);
    expect(updated).toEqual({ uuid: created.uuid, identifier: created.identifier, name: 'typo' });
    const row = await box
      .db()
      .db.selectFrom('servers')
      .select('startup')
      .where('uuid', '=', created.uuid)
      .executeTakeFirstOrThrow();
    expect(row.startup).toBe('echo hello');
    const bad = await quetzal(['server:update', '--server', created.identifier, '--disk', 'lots', '--json'], box.env);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe('');
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    // --database-limit exists now (docs/DATABASES.md); a bad value is refused like the others.
    const database = await quetzal(['server:update', '--server', created.identifier, '--database-limit', 'x', '--json'], box.env);
    expect(database.code).toBe(1);
    expect(database.stderr).toContain('--database-limit');
  }, 120_000);
});
