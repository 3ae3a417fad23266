import { randomInt } from 'node:crypto';
import type { AppDeps } from '../../deps.js';
import type { Queryable } from '../../db/database.js';
import type { ServerRow } from '../../db/schema.js';
import { crashPoint } from '../../crash-point.js';
import { HttpError, ValidationError, notFound } from '../../http/errors.js';
import { processInstance } from '../../instance.js';
import { openSecret, sealSecret, secretsKey } from '../../secrets.js';
import { recordActivity, type Actor } from '../activity/activity.recorder.js';
import {
  createRemoteDatabase,
  dropRemoteDatabase,
  remoteDatabaseExists,
  HostError,
  setRemotePassword,
  type HostCredentials,
} from './databases.engines.js';
import { decodeDatabaseId } from './databases.ids.js';
import {
  countDatabasesOfServer,
  countDatabasesPerHost,
  databaseNameTaken,
  deleteDatabaseCreation,
  deleteServerDatabase,
  finishDatabaseCreation,
  insertDatabaseCreation,
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

function nameTaken(): ValidationError {
  return ValidationError.of('database', 'unique', 'The database name you have selected is already in use by this server.');
}

function noHost(): HttpError {
  return new HttpError(503, 'NoSuitableDatabaseHostException', 'No database host is available to create this database on.');
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
 * How long a creation's record protects it from the recovery pass of another
 * machine (one on this machine sees at once that a dead creator is gone).
 * Far above what the host's statements take (a 5 s connect timeout, then a
 * few statements); a creator slower than this finds its record taken over
 * and fails.
 */
export const DATABASE_CREATION_LEASE_MS = 60_000;

/**
 * POST /databases, in three steps so that a SIGKILL at any instant leaves
 * nothing the recovery pass cannot clean (docs/DATABASES.md "Failures and
 * crashes"):
 *
 * 1. one transaction holding the server's row checks the limit and the name
 *    and commits a `database_creations` record (which counts against both);
 * 2. the database and user are created on the host;
 * 3. one transaction deletes the record and writes the row and its activity.
 *
 * A failure after step 1 drops what the host has and deletes the record. A
 * crash leaves the record; the recovery pass drops its database and user on
 * the host and deletes it.
 */
export async function createServerDatabase(
  deps: DatabaseDeps,
  server: ServerRow,
  actor: Actor,
  input: CreateDatabaseInput,
): Promise<DatabaseView> {
  const name = remoteDatabaseName(server.id, input.database);
  const password = randomDatabasePassword();
  const owner = processInstance().id;
  // Before anything is recorded: a database of this name already on the host (an orphan the panel does not
  // know) is refused and never touched, so the recovery pass's DROP ... IF EXISTS can only meet what we made.
  // The panel's own name first (checked again under the lock): a name in use is a 422, not the host's orphan.
  if (await databaseNameTaken(deps.db, server.id, name)) throw nameTaken();
  const chosen = await pickHost(deps.db);
  if (!chosen) throw noHost();
  if (await remoteDatabaseExists(credentialsOf(deps, chosen), name).catch(hostFailed)) {
    throw new HttpError(
      502,
      'DatabaseHostException',
      'The database host already has a database of this name; ask an administrator.',
    );
  }
  const { creation, host } = await deps.db.transaction().execute(async (trx) => {
    const current = await lockServerForDatabases(trx, server.id);
    if (!current) throw notFound();
    if ((await countDatabasesOfServer(trx, server.id)) >= current.database_limit) {
      throw new HttpError(
        400,
        'TooManyDatabasesException',
        'Operation aborted: creating a new database would put this server over the defined limit.',
      );
    }
    if (await databaseNameTaken(trx, server.id, name)) throw nameTaken();
    // The host checked above, unless it filled up meanwhile.
    const host = await pickHost(trx);
    if (!host || host.id !== chosen.id) throw noHost();
    const now = deps.clock.now();
    const creation = await insertDatabaseCreation(trx, {
      server_id: server.id,
      database_host_id: host.id,
      database: name,
      username: `u${server.id}_${randomFrom(LETTERS + DIGITS, 10)}`,
      remote: input.remote,
      owner,
      lease_expires_at: now + DATABASE_CREATION_LEASE_MS,
      created_at: now,
    });
    return { creation, host };
  });
  crashPoint('database-creation-recorded');
  const remote = { database: name, username: creation.username, remote: input.remote };
  try {
    await createRemoteDatabase(credentialsOf(deps, host), { ...remote, password, maxConnections: 0 });
  } catch (error) {
    // createRemoteDatabase dropped what it had made (never what was there before): only the record is left.
    await deleteDatabaseCreation(deps.db, creation.id).catch(() => undefined);
    return hostFailed(error);
  }
  try {
    crashPoint('database-created-on-host');
    return await deps.db.transaction().execute(async (trx) => {
      if (!(await finishDatabaseCreation(trx, creation.id, owner))) {
        throw new HttpError(502, 'DatabaseHostException', 'The database host took too long to create the database; try again.');
      }
      const now = deps.clock.now();
      const row = await insertServerDatabase(trx, {
        server_id: server.id,
        database_host_id: host.id,
        database: name,
        username: creation.username,
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
    // Compensation for what we created: the host's objects first (idempotent), then the record, so that a
    // crash in between still leaves the record for the recovery pass.
    const dropped = await dropRemoteDatabase(credentialsOf(deps, host), remote).then(
      () => true,
      () => false,
    );
    if (dropped) await deleteDatabaseCreation(deps.db, creation.id).catch(() => undefined);
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
