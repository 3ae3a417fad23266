import { randomInt } from 'node:crypto';
import type { AppDeps } from '../../deps.js';
import type { Queryable } from '../../db/database.js';
import type { ServerRow } from '../../db/schema.js';
import { HttpError, ValidationError, notFound } from '../../http/errors.js';
import { openSecret, sealSecret, secretsKey } from '../../secrets.js';
import { recordActivity, type Actor } from '../activity/activity.recorder.js';
import {
  createRemoteDatabase,
  dropRemoteDatabase,
  HostError,
  setRemotePassword,
  type HostCredentials,
} from './databases.engines.js';
import { decodeDatabaseId } from './databases.ids.js';
import {
  countDatabasesOfServer,
  countDatabasesPerHost,
  deleteServerDatabase,
  findDatabaseByName,
  findDatabaseHost,
  findDatabaseHosts,
  findDatabaseOfServer,
  findDatabasesOfServer,
  insertServerDatabase,
  lockServerForDatabases,
  setServerDatabasePassword,
  type DatabaseHostRow,
  type ServerDatabaseRow,
} from './databases.repository.js';
import type { CreateDatabaseInput } from './databases.schemas.js';

export type DatabaseDeps = Pick<AppDeps, 'db' | 'clock'> & { appKey: Buffer };

/** A server database with its host, what the transformer shows. */
export interface DatabaseView {
  row: ServerDatabaseRow;
  host: DatabaseHostRow;
}

const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
const DIGITS = '0123456789';
const SPECIALS = '!@#$%^&*()-_=+[]{}|;:,.<>?';

function randomFrom(alphabet: string, length: number): string {
  let text = '';
  for (let i = 0; i < length; i++) text += alphabet[randomInt(alphabet.length)]!;
  return text;
}

/** Pterodactyl's database password: 24 characters with at least one special character (never a quote or backslash). */
export function randomDatabasePassword(): string {
  const base = randomFrom(LETTERS + DIGITS + SPECIALS, 23);
  const at = randomInt(24);
  return base.slice(0, at) + randomFrom(SPECIALS, 1) + base.slice(at);
}

/** The host's name for a server's database (Pterodactyl's DatabaseManagementService::generateUniqueDatabaseName). */
export function remoteDatabaseName(serverId: number, database: string): string {
  return `s${serverId}_${database}`;
}

export function credentialsOf(deps: { appKey: Buffer }, host: DatabaseHostRow): HostCredentials {
  return {
    engine: host.engine,
    host: host.host,
    port: host.port,
    username: host.username,
    password: openSecret(secretsKey(deps.appKey), host.password),
    ...(host.maintenance_db ? { database: host.maintenance_db } : {}),
  };
}

function hostFailed(error: unknown): never {
  if (error instanceof HostError) {
    throw new HttpError(502, 'DatabaseHostException', 'The database host could not complete the request; try again later.');
  }
  throw error;
}

export async function listServerDatabases(db: Queryable, server: ServerRow): Promise<DatabaseView[]> {
  const rows = await findDatabasesOfServer(db, server.id);
  const hosts = new Map((await findDatabaseHosts(db)).map((host) => [host.id, host]));
  return rows.flatMap((row) => {
    const host = hosts.get(row.database_host_id);
    return host ? [{ row, host }] : [];
  });
}

/** The database `{database}` of the path names, or a 404. */
export async function findServerDatabase(db: Queryable, server: ServerRow, hashid: string): Promise<DatabaseView> {
  const id = decodeDatabaseId(hashid);
  const row = id === undefined ? undefined : await findDatabaseOfServer(db, id, server.id);
  const host = row ? await findDatabaseHost(db, row.database_host_id) : undefined;
  if (!row || !host) throw notFound();
  return { row, host };
}

export function databasePassword(deps: { appKey: Buffer }, row: ServerDatabaseRow): string {
  return openSecret(secretsKey(deps.appKey), row.password);
}

/** The first host (in the order they were added) below its `max_databases`; documented in docs/DATABASES.md. */
async function pickHost(db: Queryable): Promise<DatabaseHostRow | undefined> {
  const counts = await countDatabasesPerHost(db);
  return (await findDatabaseHosts(db)).find(
    (host) => host.max_databases === null || (counts.get(host.id) ?? 0) < host.max_databases,
  );
}

/**
 * POST /databases: within one transaction holding the server's row, checks
 * the limit and the name, creates the database and user on the host, then
 * writes the row and its activity. If anything after the remote CREATE fails,
 * the remote database and user are dropped again (compensation).
 */
export async function createServerDatabase(
  deps: DatabaseDeps,
  server: ServerRow,
  actor: Actor,
  input: CreateDatabaseInput,
): Promise<DatabaseView> {
  const name = remoteDatabaseName(server.id, input.database);
  const password = randomDatabasePassword();
  let created: { host: DatabaseHostRow; username: string } | undefined;
  try {
    return await deps.db.transaction().execute(async (trx) => {
      const current = await lockServerForDatabases(trx, server.id);
      if (!current) throw notFound();
      if ((await countDatabasesOfServer(trx, server.id)) >= current.database_limit) {
        throw new HttpError(
          400,
          'TooManyDatabasesException',
          'Operation aborted: creating a new database would put this server over the defined limit.',
        );
      }
      if (await findDatabaseByName(trx, server.id, name)) {
        throw ValidationError.of('database', 'unique', 'The database name you have selected is already in use by this server.');
      }
      const host = await pickHost(trx);
      if (!host) {
        throw new HttpError(503, 'NoSuitableDatabaseHostException', 'No database host is available to create this database on.');
      }
      const username = `u${server.id}_${randomFrom(LETTERS + DIGITS, 10)}`;
      await createRemoteDatabase(credentialsOf(deps, host), {
        database: name,
        username,
        password,
        remote: input.remote,
        maxConnections: 0,
      }).catch(hostFailed);
      created = { host, username };
      const now = deps.clock.now();
      const row = await insertServerDatabase(trx, {
        server_id: server.id,
        database_host_id: host.id,
        database: name,
        username,
        remote: input.remote,
        password: sealSecret(secretsKey(deps.appKey), password),
        max_connections: 0,
        created_at: now,
        updated_at: now,
      });
      await recordActivity(trx, {
        serverId: server.id,
        event: 'server:database.create',
        actor,
        properties: { name },
        timestamp: now,
      });
      return { row, host };
    });
  } catch (error) {
    if (created) {
      await dropRemoteDatabase(credentialsOf(deps, created.host), {
        database: name,
        username: created.username,
        remote: input.remote,
      }).catch(() => undefined);
    }
    throw error;
  }
}

/** POST /databases/{id}/rotate-password: the host first, then the sealed copy and the activity in one transaction. */
export async function rotateServerDatabasePassword(
  deps: DatabaseDeps,
  server: ServerRow,
  view: DatabaseView,
  actor: Actor,
): Promise<DatabaseView> {
  const password = randomDatabasePassword();
  return deps.db.transaction().execute(async (trx) => {
    const row = await findDatabaseOfServer(trx, view.row.id, server.id);
    if (!row) throw notFound();
    await setRemotePassword(credentialsOf(deps, view.host), { ...row, password, maxConnections: row.max_connections }).catch(
      hostFailed,
    );
    const now = deps.clock.now();
    const sealed = sealSecret(secretsKey(deps.appKey), password);
    await setServerDatabasePassword(trx, row.id, sealed, now);
    await recordActivity(trx, {
      serverId: server.id,
      event: 'server:database.rotate-password',
      actor,
      properties: { name: row.database },
      timestamp: now,
    });
    return { row: { ...row, password: sealed, updated_at: now }, host: view.host };
  });
}

/** DELETE /databases/{id}: dropped on the host (idempotent), then the row and the activity in one transaction. */
export async function deleteServerDatabaseEverywhere(
  deps: DatabaseDeps,
  server: ServerRow,
  view: DatabaseView,
  actor: Actor | null,
): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const row = await findDatabaseOfServer(trx, view.row.id, server.id);
    if (!row) throw notFound();
    await dropRemoteDatabase(credentialsOf(deps, view.host), row).catch(hostFailed);
    await deleteServerDatabase(trx, row.id);
    if (actor) {
      await recordActivity(trx, {
        serverId: server.id,
        event: 'server:database.delete',
        actor,
        properties: { name: row.database },
        timestamp: deps.clock.now(),
      });
    }
  });
}

/** Drops every database of a server on its host (server deletion); the rows go with the server. */
export async function dropDatabasesOfServer(deps: DatabaseDeps, serverId: number): Promise<void> {
  const rows = await findDatabasesOfServer(deps.db, serverId);
  for (const row of rows) {
    const host = await findDatabaseHost(deps.db, row.database_host_id);
    if (host) await dropRemoteDatabase(credentialsOf(deps, host), row);
    await deleteServerDatabase(deps.db, row.id);
  }
}
