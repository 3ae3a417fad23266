/**
 * The SQL a database host runs for a server's database (docs/reference/accounts.md, docs/DATABASES.md):
 * MariaDB/MySQL through mysql2, PostgreSQL through pg. Every identifier comes
 * from validated input (`s{id}_[\w-]+`, `u{id}_[A-Za-z0-9]{10}`, a remote of
 * `[\d.%]+`) and is quoted all the same; passwords travel as escaped literals.
 * Errors never carry the host's credentials: callers get HostError, whose
 * message names only the host.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { DatabaseEngine } from '../../db/schema.js';

export interface HostCredentials {
  engine: DatabaseEngine;
  host: string;
  port: number;
  username: string;
  password: string;
  /** PostgreSQL's maintenance database (where CREATE DATABASE runs). */
  database?: string | undefined;
}

export interface RemoteDatabase {
  database: string;
  username: string;
  password: string;
  remote: string;
  maxConnections: number;
}

/** A host that failed: the message says which host and what the engine answered, never a password. */
export class HostError extends Error {}

const CONNECT_TIMEOUT_MS = 5000;

function scrub(error: unknown, secrets: readonly string[]): string {
  let text = error instanceof Error ? error.message : String(error);
  for (const secret of secrets) if (secret) text = text.split(secret).join('***');
  return text;
}

function mysqlIdent(name: string): string {
  return '`' + name.replace(/`/g, '``') + '`';
}

function sqlString(value: string): string {
  return "'" + value.replace(/\\/g, '\\\\').replace(/'/g, "''") + "'";
}

function pgIdent(name: string): string {
  return '"' + name.replace(/"/g, '""') + '"';
}

function pgString(value: string): string {
  return "'" + value.replace(/'/g, "''") + "'";
}

async function withMysql<T>(host: HostCredentials, run: (conn: mysql.Connection) => Promise<T>, secrets: string[]): Promise<T> {
  let conn: mysql.Connection | undefined;
  try {
    conn = await mysql.createConnection({
      host: host.host,
      port: host.port,
      user: host.username,
      password: host.password,
      connectTimeout: CONNECT_TIMEOUT_MS,
      multipleStatements: false,
    });
    return await run(conn);
  } catch (error) {
    throw new HostError(`database host ${host.host}:${host.port}: ${scrub(error, [host.password, ...secrets])}`);
  } finally {
    await conn?.end().catch(() => undefined);
  }
}

async function withPg<T>(host: HostCredentials, run: (client: pg.Client) => Promise<T>, secrets: string[]): Promise<T> {
  const client = new pg.Client({
    host: host.host,
    port: host.port,
    user: host.username,
    password: host.password,
    database: host.database ?? 'postgres',
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await run(client);
  } catch (error) {
    throw new HostError(`database host ${host.host}:${host.port}: ${scrub(error, [host.password, ...secrets])}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Connects and checks the account may create databases and users (database-host:add). */
export async function checkHost(host: HostCredentials): Promise<void> {
  if (host.engine === 'mysql') {
    await withMysql(
      host,
      async (conn) => {
        const [rows] = await conn.query('SHOW GRANTS FOR CURRENT_USER()');
        const grants = (rows as Record<string, string>[])
          .map((row) => Object.values(row)[0] ?? '')
          .join('\n')
          .toUpperCase();
        const all = /GRANT ALL PRIVILEGES ON \*\.\* .*WITH GRANT OPTION/.test(grants);
        const some = /ON \*\.\*/.test(grants) && grants.includes('CREATE USER') && grants.includes('WITH GRANT OPTION');
        if (!all && !some) throw new Error('the account may not create databases and users (needs ALL ON *.* WITH GRANT OPTION)');
      },
      [],
    );
    return;
  }
  await withPg(
    host,
    async (client) => {
      const result = await client.query<{ rolsuper: boolean; rolcreatedb: boolean; rolcreaterole: boolean }>(
        'SELECT rolsuper, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = current_user',
      );
      const role = result.rows[0];
      if (!role || !(role.rolsuper || (role.rolcreatedb && role.rolcreaterole))) {
        throw new Error('the role may not create databases and roles (needs CREATEDB and CREATEROLE)');
      }
    },
    [],
  );
}

/** Whether a database of this name exists on the host (one the panel does not know: an orphan). */
export async function remoteDatabaseExists(host: HostCredentials, database: string): Promise<boolean> {
  if (host.engine === 'mysql') {
    return withMysql(
      host,
      async (conn) => {
        const [rows] = await conn.query('SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [database]);
        return (rows as unknown[]).length > 0;
      },
      [],
    );
  }
  return withPg(
    host,
    async (client) => (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database])).rows.length > 0,
    [],
  );
}

/** Creates the database and its user; on a failure, whatever it created is dropped again before it throws. */
export async function createRemoteDatabase(host: HostCredentials, db: RemoteDatabase): Promise<void> {
  // What exists by now: only that is dropped on a failure (never a database that was there before).
  const made = { database: false, user: false };
  try {
    if (host.engine === 'mysql') {
      await withMysql(
        host,
        async (conn) => {
          const user = `${sqlString(db.username)}@${sqlString(db.remote)}`;
          await conn.query(`CREATE DATABASE ${mysqlIdent(db.database)}`);
          made.database = true;
          await conn.query(
            `CREATE USER ${user} IDENTIFIED BY ${sqlString(db.password)}` +
              (db.maxConnections > 0 ? ` WITH MAX_USER_CONNECTIONS ${Math.trunc(db.maxConnections)}` : ''),
          );
          made.user = true;
          await conn.query(`GRANT ALL PRIVILEGES ON ${mysqlIdent(db.database.replace(/[_%]/g, '\\$&'))}.* TO ${user}`);
          await conn.query('FLUSH PRIVILEGES');
        },
        [db.password],
      );
    } else {
      await withPg(
        host,
        async (client) => {
          const limit = db.maxConnections > 0 ? Math.trunc(db.maxConnections) : -1;
          await client.query(
            `CREATE ROLE ${pgIdent(db.username)} LOGIN PASSWORD ${pgString(db.password)} CONNECTION LIMIT ${limit}`,
          );
          made.user = true;
          await client.query(`CREATE DATABASE ${pgIdent(db.database)} OWNER ${pgIdent(db.username)}`);
          made.database = true;
          await client.query(`REVOKE CONNECT ON DATABASE ${pgIdent(db.database)} FROM PUBLIC`);
          await client.query(`GRANT CONNECT ON DATABASE ${pgIdent(db.database)} TO ${pgIdent(db.username)}`);
        },
        [db.password],
      );
    }
  } catch (error) {
    await dropRemoteParts(host, db, made).catch(() => undefined);
    throw error;
  }
}

/** Drops the database and its user, each only if it exists (so it also cleans up after a half-done create). */
export async function dropRemoteDatabase(
  host: HostCredentials,
  db: Omit<RemoteDatabase, 'password' | 'maxConnections'>,
): Promise<void> {
  await dropRemoteParts(host, db, { database: true, user: true });
}

/** Gives the user a new password (rotate-password). */
export async function setRemotePassword(host: HostCredentials, db: RemoteDatabase): Promise<void> {
  if (host.engine === 'mysql') {
    await withMysql(
      host,
      async (conn) => {
        await conn.query(`ALTER USER ${sqlString(db.username)}@${sqlString(db.remote)} IDENTIFIED BY ${sqlString(db.password)}`);
        await conn.query('FLUSH PRIVILEGES');
      },
      [db.password],
    );
    return;
  }
  await withPg(
    host,
    async (client) => {
      await client.query(`ALTER ROLE ${pgIdent(db.username)} PASSWORD ${pgString(db.password)}`);
    },
    [db.password],
  );
}

async function dropRemoteParts(
  host: HostCredentials,
  db: Omit<RemoteDatabase, 'password' | 'maxConnections'>,
  parts: { database: boolean; user: boolean },
): Promise<void> {
  if (host.engine === 'mysql') {
    await withMysql(
      host,
      async (conn) => {
        if (parts.database) await conn.query(`DROP DATABASE IF EXISTS ${mysqlIdent(db.database)}`);
        if (parts.user) await conn.query(`DROP USER IF EXISTS ${sqlString(db.username)}@${sqlString(db.remote)}`);
        await conn.query('FLUSH PRIVILEGES');
      },
      [],
    );
    return;
  }
  await withPg(
    host,
    async (client) => {
      if (parts.database) await client.query(`DROP DATABASE IF EXISTS ${pgIdent(db.database)} WITH (FORCE)`);
      if (parts.user) await client.query(`DROP ROLE IF EXISTS ${pgIdent(db.username)}`);
    },
    [],
  );
}
