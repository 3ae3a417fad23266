import { Migrator, sql, type DatabaseIntrospector, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { preparePrivateFile } from '../private-files.js';
import { migrateLockFile, type DatabaseHandle } from './database.js';
import type { Tables } from './schema.js';
import { openSqliteConnection } from './sqlite-driver.js';
import { initialMigration } from './migrations/001_initial.js';
import { activityMigration } from './migrations/002_activity.js';
import { schedulerMigration } from './migrations/003_scheduler.js';
import { changeGenerationsMigration } from './migrations/004_change_generations.js';
import { fileOperationsMigration } from './migrations/005_file_operations.js';
import { serverLimitsMigration } from './migrations/006_server_limits.js';
import { passwordsSessionsMigration } from './migrations/007_passwords_sessions.js';
import { allocationsMigration } from './migrations/008_allocations.js';
import { serverUidInodesMigration } from './migrations/009_server_uid_inodes.js';
import { eggsMigration } from './migrations/010_eggs.js';
import { accountsDatabasesMigration } from './migrations/011_accounts_databases.js';
import { databaseCreationsMigration } from './migrations/012_database_creations.js';

/** Every migration, in order. Each is written once for both databases. */
function migrationsFor(handle: DatabaseHandle): Record<string, Migration> {
  return {
    '001_initial': initialMigration(handle.dialect),
    '002_activity': activityMigration(handle.dialect),
    '003_scheduler': schedulerMigration(handle.dialect),
    '004_change_generations': changeGenerationsMigration(handle.dialect),
    '005_file_operations': fileOperationsMigration(handle.dialect),
    '006_server_limits': serverLimitsMigration(handle.dialect),
    '007_passwords_sessions': passwordsSessionsMigration(handle.dialect),
    '008_allocations': allocationsMigration(handle.dialect),
    '009_server_uid_inodes': serverUidInodesMigration(handle.dialect),
    '010_eggs': eggsMigration(handle.dialect),
    '011_accounts_databases': accountsDatabasesMigration(handle.dialect),
    '012_database_creations': databaseCreationsMigration(handle.dialect),
  };
}

class InCodeMigrations implements MigrationProvider {
  constructor(private readonly handle: DatabaseHandle) {}
  async getMigrations() {
    return migrationsFor(this.handle);
  }
}

/** Brings the schema up to date; safe to run from several processes at once. */
export async function migrateToLatest(handle: DatabaseHandle): Promise<void> {
  const release = handle.file ? lockSqliteMigrations(handle.file) : () => {};
  try {
    await runMigrations(handle);
  } finally {
    release();
  }
}

/**
 * Kysely takes no migration lock on SQLite (it assumes one process), so two
 * processes migrating a fresh file at once would both create the tables. The
 * lock is a write transaction on a small side file: the second process waits
 * for the first, then finds nothing left to do. SQLite's file locks die with
 * their process, so a crashed migration never leaves a stale lock behind.
 * (Within one process, migrate a file from one handle at a time: the lock is
 * taken synchronously and would wait on a migration that cannot proceed.)
 */
function lockSqliteMigrations(file: string): () => void {
  // Readable by the service's user only, like the database (docs/reference/containment.md).
  preparePrivateFile(migrateLockFile(file));
  const lock = openSqliteConnection(migrateLockFile(file));
  try {
    lock.exec('PRAGMA busy_timeout = 120000');
    lock.exec('BEGIN IMMEDIATE');
  } catch (err) {
    lock.close();
    throw err;
  }
  return () => {
    lock.exec('ROLLBACK');
    lock.close();
  };
}

async function runMigrations(handle: DatabaseHandle): Promise<void> {
  const migrator = new Migrator({
    db: withOwnSchemaIntrospection(handle),
    provider: new InCodeMigrations(handle),
    // Kysely looks for its bookkeeping tables in every schema; name ours.
    ...(handle.schema ? { migrationTableSchema: handle.schema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message ?? String(error)}`);
  }
}

/**
 * Kysely's migrator finds its bookkeeping tables by introspecting every schema
 * of the database, calling functions on each schema by name
 * (`has_schema_privilege`, `pg_get_serial_sequence`): a schema that another
 * deployment or test run drops meanwhile fails that query with "schema ...
 * does not exist" although ours is fine. On PostgreSQL the migrator is given
 * an introspection that looks only at our own schema, by a plain catalog join.
 */
export function withOwnSchemaIntrospection(handle: DatabaseHandle): Kysely<Tables> {
  if (handle.dialect !== 'postgres') return handle.db;
  const db = handle.db;
  const own = handle.schema === undefined ? sql<string>`current_schema()` : sql<string>`${handle.schema}`;
  const introspection: DatabaseIntrospector = {
    getSchemas: () => db.introspection.getSchemas(),
    async getTables() {
      const { rows } = await sql<{ name: string; schema: string }>`
        select c.relname as name, n.nspname as schema from pg_catalog.pg_class c
        join pg_catalog.pg_namespace n on n.oid = c.relnamespace
        where n.nspname = ${own} and c.relkind in ('r', 'p')`.execute(db);
      return rows.map((row) => ({ name: row.name, schema: row.schema, isView: false, columns: [] }));
    },
    async getMetadata() {
      return { tables: await this.getTables() };
    },
  };
  return new Proxy(db, {
    get(target, property) {
      if (property === 'introspection') return introspection;
      const value: unknown = Reflect.get(target, property, target);
      // Kysely's methods use private fields: call them on the instance itself, not on the proxy.
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
