import type { Queryable } from '../../db/database.js';
import type { DatabaseEngine } from '../../db/schema.js';
import { sealSecret, secretsKey } from '../../secrets.js';
import { checkHost, type HostCredentials } from './databases.engines.js';
import {
  countDatabasesPerHost,
  deleteDatabaseHost,
  findDatabaseHostByName,
  findDatabaseHosts,
  insertDatabaseHost,
} from './databases.repository.js';

/** A refusal the admin command line shows as is: it never holds a password. */
export class DatabaseHostError extends Error {}

/** `mysql://user:pass@host:port` or `postgres://user:pass@host:port[/maintenance-db]`. */
export function parseHostUrl(text: string): HostCredentials {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new DatabaseHostError('--url must look like mysql://user:pass@host:port or postgres://user:pass@host:port[/db]');
  }
  const scheme = url.protocol.replace(/:$/, '');
  const engine: DatabaseEngine | undefined =
    scheme === 'mysql' || scheme === 'mariadb'
      ? 'mysql'
      : scheme === 'postgres' || scheme === 'postgresql'
        ? 'postgres'
        : undefined;
  if (!engine) throw new DatabaseHostError('--url must start with mysql:// or postgres://');
  const username = decodeURIComponent(url.username);
  if (!url.hostname || !username) throw new DatabaseHostError('--url needs a user and a host');
  const port = url.port ? Number(url.port) : engine === 'mysql' ? 3306 : 5432;
  const path = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (engine === 'mysql' && path) throw new DatabaseHostError('a mysql:// URL takes no database');
  if (path.includes('\n')) throw new DatabaseHostError('--url has an invalid database');
  return {
    engine,
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port,
    username,
    password: decodeURIComponent(url.password),
    database: path || undefined,
  };
}

/**
 * database-host:add: connects and checks the account's rights before saving;
 * the password is sealed with the app key. PostgreSQL's maintenance database
 * (the URL's path) goes in `maintenance_db`.
 */
export async function addDatabaseHost(
  db: Queryable,
  appKey: Buffer,
  input: { name: string; url: string; maxDatabases: number | null; now: number },
) {
  const credentials = parseHostUrl(input.url);
  if (await findDatabaseHostByName(db, input.name)) throw new DatabaseHostError(`A database host named "${input.name}" exists.`);
  await checkHost(credentials).catch((error: unknown) => {
    throw new DatabaseHostError(error instanceof Error ? error.message : 'the database host could not be reached');
  });
  const row = await insertDatabaseHost(db, {
    name: input.name,
    engine: credentials.engine,
    host: credentials.host,
    port: credentials.port,
    username: credentials.username,
    maintenance_db: credentials.database ?? null,
    password: sealSecret(secretsKey(appKey), credentials.password),
    max_databases: input.maxDatabases,
    created_at: input.now,
    updated_at: input.now,
  });
  return publicHost(row, 0);
}

function publicHost(
  row: {
    id: number;
    name: string;
    engine: DatabaseEngine;
    host: string;
    port: number;
    username: string;
    maintenance_db: string | null;
    max_databases: number | null;
  },
  databases: number,
) {
  return {
    id: row.id,
    name: row.name,
    engine: row.engine,
    host: row.host,
    port: row.port,
    username: row.username,
    maintenance_database: row.maintenance_db,
    max_databases: row.max_databases,
    databases,
  };
}

/** database-host:list: never the password. */
export async function listDatabaseHosts(db: Queryable) {
  const counts = await countDatabasesPerHost(db);
  return (await findDatabaseHosts(db)).map((row) => publicHost(row, counts.get(row.id) ?? 0));
}

/** database-host:remove: refused while the host holds databases. */
export async function removeDatabaseHost(db: Queryable, name: string): Promise<void> {
  const row = await findDatabaseHostByName(db, name);
  if (!row) throw new DatabaseHostError(`No database host named "${name}".`);
  const count = (await countDatabasesPerHost(db)).get(row.id) ?? 0;
  if (count > 0) throw new DatabaseHostError(`The database host "${name}" still holds ${count} database(s); delete them first.`);
  await deleteDatabaseHost(db, row.id);
}
