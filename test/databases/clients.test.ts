import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Client as JsPteroClient } from 'jspteroapi';
import { ClientDatabaseManager, PteroClient } from '@devnote-dev/pterojs';
import { loadAppKey } from '../../src/app-key.js';
import { dropRemoteDatabase } from '../../src/modules/databases/databases.engines.js';
import { addDatabaseHost, parseHostUrl } from '../../src/modules/databases/database-hosts.service.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

/** The npm clients' database methods, unchanged, over real HTTP against a real MariaDB host. */
const URL = 'mysql://root:@127.0.0.1:3306';
const run = randomBytes(3).toString('hex');

async function canConnect(user: string, password: string, database: string): Promise<boolean> {
  try {
    const conn = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user, password, database });
    await conn.end();
    return true;
  } catch {
    return false;
  }
}

describeEachDatabase('database methods of existing clients', (database) => {
  const h = useHarness(database);
  let baseUrl = '';

  beforeAll(async () => {
    baseUrl = await h.app.listen({ host: '127.0.0.1', port: 0 });
    await addDatabaseHost(h.deps.db, loadAppKey(h.dataDir, {}), {
      name: `c-${run}`,
      url: URL,
      maxDatabases: null,
      now: h.clock.now(),
    });
  });
  afterAll(async () => {
    for (const row of await h.deps.db.selectFrom('server_databases').selectAll().execute()) {
      await dropRemoteDatabase(parseHostUrl(URL), row).catch(() => undefined);
    }
    await h.app.close();
  });

  it('jspteroapi: createDatabase, getAllDatabases (include password), rotateDatabasePass, deleteDatabase', async () => {
    const { owner, server } = await h.make.ownedServer();
    await h.deps.db.updateTable('servers').set({ database_limit: 1 }).where('id', '=', server.id).execute();
    const client = new JsPteroClient(baseUrl, owner.token, undefined, true);
    const created = await client.createDatabase(server.uuid_short, `j${run}`, '%');
    expect(created).toMatchObject({ name: `s${server.id}_j${run}`, connections_from: '%' });
    const password = created.relationships!.password.attributes.password;
    expect(await canConnect(created.username, password, created.name)).toBe(true);
    const all = await client.getAllDatabases(server.uuid_short, { password: true });
    expect(all.map((d: { attributes: { id: string } }) => d.attributes.id)).toEqual([created.id]);
    const rotated = await client.rotateDatabasePass(server.uuid_short, created.id);
    const newPassword = rotated.relationships!.password.attributes.password;
    expect(newPassword).not.toBe(password);
    expect(await canConnect(created.username, password, created.name)).toBe(false);
    expect(await canConnect(created.username, newPassword, created.name)).toBe(true);
    await client.deleteDatabase(server.uuid_short, created.id);
    expect(await canConnect(created.username, newPassword, created.name)).toBe(false);
    expect(await client.getAllDatabases(server.uuid_short)).toEqual([]);
  });

  it('pterojs: databases.create, fetch, rotate, delete', async () => {
    const { owner, server } = await h.make.ownedServer();
    await h.deps.db.updateTable('servers').set({ database_limit: 1 }).where('id', '=', server.id).execute();
    const client = new PteroClient(baseUrl, owner.token, {
      fetchClient: false,
      servers: { fetch: false, cache: false },
    } as never);
    const databases = new ClientDatabaseManager(client, server.uuid_short);
    const created = (await databases.create(`p${run}`, '%')) as unknown as {
      id: string;
      name: string;
      username: string;
      relationships: { password: { attributes: { password: string } } };
    };
    expect(created.name).toBe(`s${server.id}_p${run}`);
    expect(await canConnect(created.username, created.relationships.password.attributes.password, created.name)).toBe(true);
    const fetched = await databases.fetch();
    expect([...fetched.keys()]).toEqual([created.id]);
    const rotated = (await databases.rotate(created.id as never)) as unknown as typeof created;
    expect(await canConnect(created.username, rotated.relationships.password.attributes.password, created.name)).toBe(true);
    await databases.delete(created.id as never);
    expect(await canConnect(created.username, rotated.relationships.password.attributes.password, created.name)).toBe(false);
    expect((await databases.fetch()).size).toBe(0);
  });
});
