import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { DatabaseHandle } from './database.js';
import { initialMigration } from './migrations/001_initial.js';
import { schedulerMigration } from './migrations/003_scheduler.js';

/** Every migration, in order. Each is written once for both databases. */
function migrationsFor(handle: DatabaseHandle): Record<string, Migration> {
  return {
    '001_initial': initialMigration(handle.dialect),
    '003_scheduler': schedulerMigration(handle.dialect),
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
