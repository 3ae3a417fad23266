/**
 * docs/DATABASES.md "Failures and crashes": a SIGKILL at either instant of a
 * database's creation (its record committed; the host's CREATE done, the row
 * not yet written) leaves a record the next start's recovery pass undoes on
 * the real host (MariaDB, PostgreSQL), so the same name can be created again
 * and the server's limit is whole. A record of a live instance elsewhere waits
 * for its lease.
 */
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { DialectName } from '../../src/db/database.js';
import { CLI_DIALECTS, createSandbox, quetzalJson, type CliSandbox } from '../cli/helpers.js';
import { api, deathOf, serve } from './helpers.js';

const ENGINES = {
  mysql: 'mysql://root:@127.0.0.1:3306',
  postgres: 'postgres://postgres:@127.0.0.1:5432/postgres',
} as const;
type Engine = keyof typeof ENGINES;

async function onHost(engine: Engine, database: string, username: string): Promise<{ database: boolean; user: boolean }> {
  if (engine === 'mysql') {
    const conn = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root' });
    try {
      const [schemas] = await conn.query('SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [database]);
      const [users] = await conn.query('SELECT 1 FROM mysql.user WHERE User = ?', [username]);
      return { database: (schemas as unknown[]).length > 0, user: (users as unknown[]).length > 0 };
    } finally {
      await conn.end();
    }
  }
  const client = new pg.Client({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'postgres' });
  await client.connect();
  try {
    const databases = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    const roles = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [username]);
    return { database: databases.rows.length > 0, user: roles.rows.length > 0 };
  } finally {
    await client.end();
  }
}

/** A user, a key, a server allowed one database, and a host on `engine`. */
async function setUp(box: CliSandbox, engine: Engine) {
  await quetzalJson(['user:create', '--username', 'owner', '--email', 'owner@example.com'], box.env);
  const { token } = await quetzalJson(['key:create', '--user', 'owner'], box.env);
  const server = await quetzalJson(['server:create', '--owner', 'owner', '--name', 'db', '--database-limit', '1'], box.env);
  await quetzalJson(
    ['database-host:add', '--name', `crash-${randomBytes(3).toString('hex')}`, '--url', ENGINES[engine]],
    box.env,
  );
  const row = await box.db().db.selectFrom('servers').select('id').where('uuid', '=', server.uuid).executeTakeFirstOrThrow();
  return { token: token as string, identifier: server.identifier as string, serverId: row.id };
}

const counts = async (box: CliSandbox) => {
  const db = box.db().db;
  const rows = await db.selectFrom('server_databases').select('id').execute();
  const creations = await db.selectFrom('database_creations').selectAll().execute();
  const events = await db.selectFrom('activity_logs').select('id').where('event', '=', 'server:database.create').execute();
  return { rows: rows.length, creations, events: events.length };
};

// Each engine and each crash point once, spread over the two panel databases (a case costs two service starts).
const CASES: { dialect: DialectName; engine: Engine; point: string; createdOnHost: boolean }[] = [
  { dialect: 'sqlite', engine: 'mysql', point: 'database-created-on-host', createdOnHost: true },
  { dialect: 'sqlite', engine: 'mysql', point: 'database-creation-recorded', createdOnHost: false },
  { dialect: 'postgres', engine: 'postgres', point: 'database-created-on-host', createdOnHost: true },
  { dialect: 'postgres', engine: 'mysql', point: 'database-creation-recorded', createdOnHost: false },
];

describe.concurrent('a SIGKILL while a database is created', () => {
  for (const { dialect, engine, point, createdOnHost } of CASES.filter((c) => CLI_DIALECTS.includes(c.dialect))) {
    it(
      `at ${point} on ${engine}: the next start drops what the host has, and the name is free again [${dialect}]`,
      {
        timeout: 120_000,
      },
      async () => {
        const box = await createSandbox(dialect);
        const name = `crash${randomBytes(3).toString('hex')}`;
        try {
          const { token, identifier, serverId } = await setUp(box, engine);
          const remoteName = `s${serverId}_${name}`;
          const url = `/servers/${identifier}/databases`;

          const dying = await serve(box.env, point);
          const request = api(dying, token, 'POST', url, { database: name, remote: '%' }).catch((err: unknown) => err);
          expect(await deathOf(dying)).toBe('SIGKILL');
          expect(await request).toBeInstanceOf(Error);

          // What the crash left: the record (holding the name and the limit's one slot), no row, no event.
          const left = await counts(box);
          expect(left.rows).toBe(0);
          expect(left.events).toBe(0);
          expect(left.creations.map((c) => c.database)).toEqual([remoteName]);
          const username = left.creations[0]!.username;
          expect(await onHost(engine, remoteName, username)).toEqual({ database: createdOnHost, user: createdOnHost });

          const service = await serve(box.env);
          try {
            // Recovery ran before the service answered.
            expect(await onHost(engine, remoteName, username)).toEqual({ database: false, user: false });
            expect((await counts(box)).creations).toEqual([]);

            const again = await api(service, token, 'POST', url, { database: name, remote: '%' });
            expect(again.status, JSON.stringify(again.body)).toBe(200);
            const after = await counts(box);
            expect([after.rows, after.events, after.creations.length]).toEqual([1, 1, 0]);
            const removed = await api(service, token, 'DELETE', `${url}/${again.body.attributes.id as string}`);
            expect(removed.status).toBe(204);
          } finally {
            await service.stop();
          }
        } finally {
          await box.dispose();
        }
      },
    );
  }
  for (const dialect of CLI_DIALECTS) {
    it(`a record of a live instance elsewhere is left until its lease runs out [${dialect}]`, { timeout: 120_000 }, async () => {
      const box = await createSandbox(dialect);
      try {
        const { serverId } = await setUp(box, 'mysql');
        const db = box.db().db;
        const host = await db.selectFrom('database_hosts').select('id').executeTakeFirstOrThrow();
        const plant = (database: string, leaseExpiresAt: number) =>
          db
            .insertInto('database_creations')
            .values({
              server_id: serverId,
              database_host_id: host.id,
              database,
              username: `u${serverId}_${database.slice(-6)}`,
              remote: '%',
              owner: 'quetzal|elsewhere|0123456789ab|4242|abcd',
              lease_expires_at: leaseExpiresAt,
              created_at: Date.now(),
            })
            .execute();
        await plant(`s${serverId}_live`, Date.now() + 3_600_000);
        await plant(`s${serverId}_lapsed`, Date.now() - 1_000);
        const service = await serve(box.env);
        try {
          const left = await db.selectFrom('database_creations').select('database').execute();
          expect(left.map((row) => row.database)).toEqual([`s${serverId}_live`]);
        } finally {
          await service.stop();
        }
      } finally {
        await box.dispose();
      }
    });
  }
});
