import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import type { CliContext, CliOptions } from '../../src/cli/command.js';
import { command as hostAdd } from '../../src/cli/commands/database-host-add.js';
import { command as hostList } from '../../src/cli/commands/database-host-list.js';
import { command as hostRemove } from '../../src/cli/commands/database-host-remove.js';
import { command as serverCreate } from '../../src/cli/commands/server-create.js';
import { command as serverUpdate } from '../../src/cli/commands/server-update.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

/** database-host:add|list|remove and --database-limit (docs/DATABASES.md). */
const run = randomBytes(3).toString('hex');

describeEachDatabase('database host commands', (database) => {
  const h = useHarness(database);
  const ctx = (): CliContext => ({ config: h.config, database: h.db, daemon: h.daemon, clock: h.clock });
  const call = (command: { run: (c: CliContext, o: CliOptions) => Promise<Record<string, unknown>> }, options: CliOptions) =>
    command.run(ctx(), options);

  it('adds a MariaDB and a PostgreSQL host, lists them without passwords, removes them', async () => {
    await call(hostAdd, { name: `m-${run}`, url: 'mysql://root:@127.0.0.1:3306', 'max-databases': '5' });
    await call(hostAdd, { name: `p-${run}`, url: 'postgres://postgres:@127.0.0.1:5432/postgres' });
    const listed = await call(hostList, {});
    expect(listed.hosts).toMatchObject([
      { name: `m-${run}`, engine: 'mysql', port: 3306, username: 'root', max_databases: 5, databases: 0 },
      { name: `p-${run}`, engine: 'postgres', port: 5432, username: 'postgres', maintenance_database: 'postgres' },
    ]);
    expect(JSON.stringify(listed)).not.toMatch(/password|v1:/);
    const stored = await h.db.db.selectFrom('database_hosts').select('password').execute();
    expect(stored.every((row) => row.password.startsWith('v1:'))).toBe(true);
    await expect(call(hostAdd, { name: `m-${run}`, url: 'mysql://root:@127.0.0.1:3306' })).rejects.toThrow(/exists/);
    await call(hostRemove, { name: `m-${run}` });
    await call(hostRemove, { name: `p-${run}` });
    expect((await call(hostList, {})).hosts).toEqual([]);
    await expect(call(hostRemove, { name: `m-${run}` })).rejects.toThrow(/No database host/);
  });

  it('refuses a bad URL and a wrong password without printing the password', async () => {
    await expect(call(hostAdd, { name: 'x', url: 'ftp://a:b@c' })).rejects.toThrow(/mysql:\/\/ or postgres:\/\//);
    const secret = `Pw${run}Secret`;
    for (const url of [`mysql://root:${secret}@127.0.0.1:1`, `postgres://nobody${run}:${secret}@127.0.0.1:5432/postgres`]) {
      const error = (await call(hostAdd, { name: `bad-${run}`, url }).catch((e: unknown) => e)) as Error;
      expect(error).toBeInstanceOf(Error);
      expect(error.message).not.toContain(secret);
    }
    expect((await call(hostList, {})).hosts).toEqual([]);
  });

  it('server:create and server:update --database-limit', async () => {
    const { user } = await h.make.user();
    const created = await call(serverCreate, { owner: user.username, name: 'dbs', 'database-limit': '3' });
    const limit = () =>
      h.db.db
        .selectFrom('servers')
        .select('database_limit')
        .where('uuid', '=', created.uuid as string)
        .executeTakeFirstOrThrow();
    expect((await limit()).database_limit).toBe(3);
    await call(serverUpdate, { server: created.uuid as string, 'database-limit': '0' });
    expect((await limit()).database_limit).toBe(0);
    await expect(call(serverUpdate, { server: created.uuid as string, 'database-limit': '-1' })).rejects.toThrow(
      /database-limit/,
    );
    const plain = await call(serverCreate, { owner: user.username, name: 'plain' });
    expect(
      (
        await h.db.db
          .selectFrom('servers')
          .select('database_limit')
          .where('uuid', '=', plain.uuid as string)
          .executeTakeFirstOrThrow()
      ).database_limit,
    ).toBe(0);
  });
});
