import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { DatabaseHandle } from './database.js';
import { openSqliteConnection } from './sqlite-driver.js';
import { initialMigration } from './migrations/001_initial.js';
import { activityMigration } from './migrations/002_activity.js';
import { schedulerMigration } from './migrations/003_scheduler.js';
import { changeGenerationsMigration } from './migrations/004_change_generations.js';
import { fileOperationsMigration } from './migrations/005_file_operations.js';

/** Every migration, in order. Each is written once for both databases. */
function migrationsFor(handle: DatabaseHandle): Record<string, Migration> {
  return {
    '001_initial': initialMigration(handle.dialect),
    '002_activity': activityMigration(handle.dialect),
    '003_scheduler': schedulerMigration(handle.dialect),
    '004_change_generations': changeGenerationsMigration(handle.dialect),
    '005_file_operations': fileOperationsMigration(handle.dialect),
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
  const lock = openSqliteConnection(`${file}.migrate-lock`);
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
    db: handle.db,
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
