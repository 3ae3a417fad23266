import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { loadAppKey } from '../../src/app-key.js';
import type { ServerRow } from '../../src/db/schema.js';
import { dropRemoteDatabase } from '../../src/modules/databases/databases.engines.js';
import {
  addDatabaseHost,
  listDatabaseHosts,
  parseHostUrl,
  removeDatabaseHost,
} from '../../src/modules/databases/database-hosts.service.js';
import { deleteServer } from '../../src/modules/settings/server-deletion.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness, type Harness } from '../helpers/harness.js';

/** docs/reference/accounts.md / docs/DATABASES.md: a server's databases on real MariaDB and PostgreSQL hosts. */
const ENGINES = {
  mysql: 'mysql://root:@127.0.0.1:3306',
  postgres: 'postgres://postgres:@127.0.0.1:5432/postgres',
} as const;

type Engine = keyof typeof ENGINES;

interface DatabaseItem {
  object: string;
  attributes: {
    id: string;
    host: { address: string; port: number };
    name: string;
    username: string;
    connections_from: string;
    max_connections: number;
    relationships?: { password: { object: string; attributes: { password: string } | null } };
  };
}

const run = randomBytes(3).toString('hex');
const base = (server: ServerRow) => `/api/client/servers/${server.uuid_short}/databases`;

async function canUse(engine: Engine, user: string, password: string, database: string): Promise<boolean> {
  try {
    if (engine === 'mysql') {
      const conn = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user, password, database });
      await conn.query('CREATE TABLE IF NOT EXISTS t (x int)');
      await conn.end();
    } else {
      const client = new pg.Client({ host: '127.0.0.1', port: 5432, user, password, database });
      client.on('error', () => undefined);
      await client.connect();
      await client.query('CREATE TABLE IF NOT EXISTS t (x int)');
      await client.end();
    }
    return true;
  } catch {
    return false;
  }
}

async function remoteExists(engine: Engine, database: string): Promise<boolean> {
  if (engine === 'mysql') {
    const conn = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
    const [rows] = await conn.query('SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [database]);
    await conn.end();
    return (rows as unknown[]).length > 0;
  }
  const client = new pg.Client({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'postgres' });
  await client.connect();
  const result = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
  await client.end();
  return result.rows.length > 0;
}

async function pgVerifier(role: string): Promise<string | null> {
  const client = new pg.Client({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'postgres' });
  await client.connect();
  const result = await client.query<{ rolpassword: string | null }>('SELECT rolpassword FROM pg_authid WHERE rolname = $1', [
    role,
  ]);
  await client.end();
  return result.rows[0]?.rolpassword ?? null;
}

async function withHost(h: Harness, engine: Engine, test: () => Promise<void>, maxDatabases: number | null = null) {
  const name = `${engine}-${run}-${randomBytes(2).toString('hex')}`;
  await addDatabaseHost(h.deps.db, loadAppKey(h.dataDir, {}), { name, url: ENGINES[engine], maxDatabases, now: h.clock.now() });
  try {
    await test();
    await removeDatabaseHost(h.deps.db, name);
  } finally {
    // A failed test leaves nothing behind on the engines nor in the panel.
    for (const row of await h.deps.db.selectFrom('server_databases').selectAll().execute()) {
      await dropRemoteDatabase(parseHostUrl(ENGINES[engine]), row).catch(() => undefined);
    }
    await h.deps.db.deleteFrom('server_databases').execute();
    await removeDatabaseHost(h.deps.db, name).catch(() => undefined);
  }
}

describeEachDatabase('server databases', (database) => {
  const h = useHarness(database);

  for (const engine of ['mysql', 'postgres'] as const) {
    it(`${engine}: create, connect, isolation, rotate, limit, delete`, async () => {
      await withHost(h, engine, async () => {
        const { owner, server } = await h.make.ownedServer();
        const limited = await h.request(owner.token, {
          method: 'POST',
          url: base(server),
          payload: { database: 'x1', remote: '%' },
        });
        expect(limited.statusCode).toBe(422);
        let res = await h.request(owner.token, {
          method: 'POST',
          url: base(server),
          payload: { database: `a${run}`, remote: '%' },
        });
        expect(res.statusCode, res.body).toBe(400);
        expect(res.json().errors[0].code).toBe('TooManyDatabasesException');
        await h.deps.db.updateTable('servers').set({ database_limit: 2 }).where('id', '=', server.id).execute();
        const server2 = { ...server };

        res = await h.request(owner.token, { method: 'POST', url: base(server2), payload: { database: `a${run}`, remote: '%' } });
        expect(res.statusCode, res.body).toBe(200);
        const a = res.json<DatabaseItem>();
        expect(a.object).toBe('server_database');
        expect(a.attributes.name).toBe(`s${server.id}_a${run}`);
        expect(a.attributes.username).toMatch(new RegExp(`^u${server.id}_[A-Za-z0-9]{10}$`));
        expect(a.attributes.connections_from).toBe('%');
        expect(a.attributes.host).toEqual({ address: '127.0.0.1', port: engine === 'mysql' ? 3306 : 5432 });
        expect(a.attributes.id).toMatch(/^[A-Za-z0-9]{8}$/);
        const passwordA = a.attributes.relationships!.password.attributes!.password;
        expect(passwordA).toHaveLength(24);

        const dup = await h.request(owner.token, {
          method: 'POST',
          url: base(server),
          payload: { database: `a${run}`, remote: '%' },
        });
        expect(dup.statusCode).toBe(422);
        expect(dup.json().errors[0].detail).toBe('The database name you have selected is already in use by this server.');

        res = await h.request(owner.token, { method: 'POST', url: base(server), payload: { database: `b${run}`, remote: '%' } });
        const b = res.json<DatabaseItem>();
        const passwordB = b.attributes.relationships!.password.attributes!.password;
        expect(await canUse(engine, a.attributes.username, passwordA, a.attributes.name)).toBe(true);
        expect(await canUse(engine, b.attributes.username, passwordB, b.attributes.name)).toBe(true);
        // Each user only its own database.
        expect(await canUse(engine, a.attributes.username, passwordA, b.attributes.name)).toBe(false);

        res = await h.request(owner.token, { method: 'POST', url: base(server), payload: { database: `c${run}`, remote: '%' } });
        expect(res.statusCode).toBe(400);
        expect(res.json().errors[0].detail).toBe(
          'Operation aborted: creating a new database would put this server over the defined limit.',
        );

        // Listing: no password without include; with include and the permission, the password.
        const listed = await h.request(owner.token, { method: 'GET', url: base(server) });
        expect(listed.json().data.map((d: DatabaseItem) => d.attributes.name)).toEqual([a.attributes.name, b.attributes.name]);
        expect(listed.json().data[0].attributes.relationships).toBeUndefined();
        const withPw = await h.request(owner.token, { method: 'GET', url: `${base(server)}?include=password` });
        expect(withPw.json().data[0].attributes.relationships.password.attributes.password).toBe(passwordA);
        const sub = await h.make.subuser(server, ['database.read', 'database.update']);
        const subList = await h.request(sub.token, { method: 'GET', url: `${base(server)}?include=password` });
        expect(subList.json().data[0].attributes.relationships.password).toEqual({ object: 'null_resource', attributes: null });
        const noCreate = await h.request(sub.token, {
          method: 'POST',
          url: base(server),
          payload: { database: 'zzz', remote: '%' },
        });
        expect(noCreate.statusCode).toBe(403);
        // The server object's feature limit.
        const serverObject = await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}` });
        expect(serverObject.json().attributes.feature_limits.databases, serverObject.body.slice(0, 300)).toBe(2);

        // Rotate: the old password is refused, the new one works.
        const verifierA = engine === 'postgres' ? await pgVerifier(a.attributes.username) : null;
        res = await h.request(owner.token, { method: 'POST', url: `${base(server)}/${a.attributes.id}/rotate-password` });
        expect(res.statusCode, res.body).toBe(200);
        const rotated = res.json<DatabaseItem>().attributes.relationships!.password.attributes!.password;
        expect(rotated).not.toBe(passwordA);
        if (engine === 'mysql') {
          expect(await canUse(engine, a.attributes.username, passwordA, a.attributes.name)).toBe(false);
        } else {
          // This machine's PostgreSQL trusts local connections (any password is accepted): the stored verifier must change.
          expect(await pgVerifier(a.attributes.username)).not.toBe(verifierA);
        }
        expect(await canUse(engine, a.attributes.username, rotated, a.attributes.name)).toBe(true);
        const subRotate = await h.request(sub.token, {
          method: 'POST',
          url: `${base(server)}/${b.attributes.id}/rotate-password`,
        });
        expect(subRotate.json().attributes.relationships.password).toEqual({ object: 'null_resource', attributes: null });

        // Another server's database is a 404.
        const other = await h.make.ownedServer();
        const foreign = await h.request(other.owner.token, { method: 'DELETE', url: `${base(other.server)}/${a.attributes.id}` });
        expect(foreign.statusCode).toBe(404);
        expect((await h.request(owner.token, { method: 'DELETE', url: `${base(server)}/nonsense` })).statusCode).toBe(404);

        // A host with databases cannot be removed.
        const hosts = await listDatabaseHosts(h.deps.db);
        expect(JSON.stringify(hosts)).not.toContain('v1:');
        for (const db of [a, b]) {
          expect(
            (await h.request(owner.token, { method: 'DELETE', url: `${base(server)}/${db.attributes.id}` })).statusCode,
          ).toBe(204);
          expect(await remoteExists(engine, db.attributes.name)).toBe(false);
        }
        expect(await canUse(engine, a.attributes.username, rotated, a.attributes.name)).toBe(false);

        const events = await h.deps.db
          .selectFrom('activity_logs')
          .select(['event', 'properties'])
          .where('server_id', '=', server.id)
          .orderBy('id')
          .execute();
        expect(events.map((e) => e.event).filter((e) => e.startsWith('server:database'))).toEqual([
          'server:database.create',
          'server:database.create',
          'server:database.rotate-password',
          'server:database.rotate-password',
          'server:database.delete',
          'server:database.delete',
        ]);
      });
    });
  }

  it('deleting a server drops its databases on the host', async () => {
    await withHost(h, 'mysql', async () => {
      const { owner, server } = await h.make.ownedServer();
      await h.deps.db.updateTable('servers').set({ database_limit: 1 }).where('id', '=', server.id).execute();
      const res = await h.request(owner.token, {
        method: 'POST',
        url: base(server),
        payload: { database: `d${run}`, remote: '%' },
      });
      expect(res.statusCode, res.body).toBe(200);
      const name = res.json<DatabaseItem>().attributes.name;
      expect(await remoteExists('mysql', name)).toBe(true);
      await deleteServer({ ...h.deps, appKey: loadAppKey(h.dataDir, {}) }, server, { force: true });
      expect(await remoteExists('mysql', name)).toBe(false);
      expect(await h.deps.db.selectFrom('server_databases').selectAll().execute()).toEqual([]);
    });
  });

  it('a failure on the host or in the panel leaves neither row nor remote database or user', async () => {
    await withHost(h, 'mysql', async () => {
      const { owner, server } = await h.make.ownedServer();
      await h.deps.db.updateTable('servers').set({ database_limit: 5 }).where('id', '=', server.id).execute();
      const root = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
      // A user left behind would keep its grant on the database (mysql.db names it, escaped): no row means no user.
      const grantsOn = async (suffix: string) => {
        const [rows] = await root.query('SELECT User FROM mysql.db WHERE Db LIKE ?', [`%${suffix}`]);
        return (rows as unknown[]).length;
      };
      try {
        // An orphan of the same name on the host: the remote CREATE fails, the orphan is not touched.
        const orphan = `s${server.id}_o${run}`;
        await root.query(`CREATE DATABASE \`${orphan}\``);
        const res = await h.request(owner.token, {
          method: 'POST',
          url: base(server),
          payload: { database: `o${run}`, remote: '%' },
        });
        expect(res.statusCode).toBe(502);
        expect(res.body).not.toContain('root');
        expect(await remoteExists('mysql', orphan)).toBe(true);
        await root.query(`DROP DATABASE \`${orphan}\``);

        // The panel's insert fails after the remote CREATE: the remote database and user are dropped again.
        if (h.deps.dialect === 'sqlite') {
          await sql`CREATE TRIGGER refuse_db BEFORE INSERT ON server_databases BEGIN SELECT RAISE(ABORT, 'refused'); END`.execute(
            h.deps.db,
          );
        } else {
          await sql`CREATE FUNCTION refuse_db() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$ LANGUAGE plpgsql`.execute(
            h.deps.db,
          );
          await sql`CREATE TRIGGER refuse_db BEFORE INSERT ON server_databases FOR EACH ROW EXECUTE FUNCTION refuse_db()`.execute(
            h.deps.db,
          );
        }
        try {
          const failed = await h.request(owner.token, {
            method: 'POST',
            url: base(server),
            payload: { database: `f${run}`, remote: '%' },
          });
          expect(failed.statusCode).toBe(500);
        } finally {
          if (h.deps.dialect === 'sqlite') await sql`DROP TRIGGER refuse_db`.execute(h.deps.db);
          else {
            await sql`DROP TRIGGER refuse_db ON server_databases`.execute(h.deps.db);
            await sql`DROP FUNCTION refuse_db()`.execute(h.deps.db);
          }
        }
        expect(await remoteExists('mysql', `s${server.id}_f${run}`)).toBe(false);
        expect(await grantsOn(`f${run}`)).toBe(0);
        expect(await grantsOn(`o${run}`)).toBe(0);
        expect(await h.deps.db.selectFrom('server_databases').selectAll().execute()).toEqual([]);
        const events = await h.deps.db.selectFrom('activity_logs').select('event').where('server_id', '=', server.id).execute();
        expect(events.filter((e) => e.event.startsWith('server:database'))).toEqual([]);
      } finally {
        await root.end();
      }
    });
  });

  it('validation: names and remotes as Pterodactyl', async () => {
    const { owner, server } = await h.make.ownedServer();
    for (const payload of [
      { database: 'a;drop', remote: '%' },
      { database: 'ab', remote: '%' },
      { database: 'x'.repeat(49), remote: '%' },
      { database: 'good', remote: "1.1.1.1'" },
      { database: 'good' },
    ]) {
      const res = await h.request(owner.token, { method: 'POST', url: base(server), payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
    }
  });

  it('a host that refuses the credentials: the error does not echo the password', async () => {
    const secret = `Sekr3t${run}`;
    const error = (await addDatabaseHost(h.deps.db, loadAppKey(h.dataDir, {}), {
      name: `bad-${run}`,
      url: `mysql://nobody${run}:${secret}@127.0.0.1:3306`,
      maxDatabases: null,
      now: h.clock.now(),
    }).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).not.toContain(secret);
    expect(await listDatabaseHosts(h.deps.db)).toEqual([]);
  });
});
