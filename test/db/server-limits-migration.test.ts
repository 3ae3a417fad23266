/**
 * Migration 006 (server limits) on a database that already has servers: they
 * keep working and get no limits (0, and pids null = the daemon's default).
 * The database is migrated to 005 first, with the same migrations the service
 * runs, then brought up to date by migrateToLatest.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Migrator, type Migration } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle, type DialectName } from '../../src/db/database.js';
import { migrateToLatest, withOwnSchemaIntrospection } from '../../src/db/migrate.js';
import { initialMigration } from '../../src/db/migrations/001_initial.js';
import { activityMigration } from '../../src/db/migrations/002_activity.js';
import { schedulerMigration } from '../../src/db/migrations/003_scheduler.js';
import { changeGenerationsMigration } from '../../src/db/migrations/004_change_generations.js';
import { fileOperationsMigration } from '../../src/db/migrations/005_file_operations.js';
import { TEST_DATABASE_URL } from '../helpers/databases.js';

const DIALECTS: DialectName[] = ['sqlite', ...(TEST_DATABASE_URL ? (['postgres'] as const) : [])];

async function adminQuery(text: string) {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** A fresh, unmigrated database of `dialect` and how to remove it. */
async function freshDatabase(dialect: DialectName): Promise<{ handle: DatabaseHandle; dispose(): Promise<void> }> {
  if (dialect === 'postgres') {
    const schema = `m006_${randomBytes(6).toString('hex')}`;
    await adminQuery(`CREATE SCHEMA ${schema}`);
    const handle = openDatabase(TEST_DATABASE_URL!, { searchPath: schema, poolSize: 2 });
    return {
      handle,
      async dispose() {
        await handle.close();
        await adminQuery(`DROP SCHEMA ${schema} CASCADE`);
      },
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-m006-'));
  const handle = openDatabase(`sqlite:${path.join(dir, 'test.sqlite')}`);
  return {
    handle,
    async dispose() {
      await handle.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function migrateTo005(handle: DatabaseHandle) {
  const migrations: Record<string, Migration> = {
    '001_initial': initialMigration(handle.dialect),
    '002_activity': activityMigration(handle.dialect),
    '003_scheduler': schedulerMigration(handle.dialect),
    '004_change_generations': changeGenerationsMigration(handle.dialect),
    '005_file_operations': fileOperationsMigration(handle.dialect),
  };
  const migrator = new Migrator({
    db: withOwnSchemaIntrospection(handle),
    provider: { getMigrations: async () => migrations },
    ...(handle.schema ? { migrationTableSchema: handle.schema } : {}),
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}

for (const dialect of DIALECTS) {
  describe(`migration 006_server_limits [${dialect}]`, () => {
    it('adds the limit columns; servers created before it have no limits', async () => {
      const { handle, dispose } = await freshDatabase(dialect);
      try {
        await migrateTo005(handle);
        const db = handle.db;
        const now = Date.now();
        const user = await db
          .insertInto('users')
          .values({ uuid: randomUUID(), username: 'old', email: 'old@example.com', root_admin: 0, use_totp: 0, created_at: now })
          .returning('id')
          .executeTakeFirstOrThrow();
        const uuid = randomUUID();
        // Only the columns that existed before 006.
        await db
          .insertInto('servers')
          .values({
            uuid,
            uuid_short: uuid.slice(0, 8),
            name: 'old server',
            owner_id: user.id,
            status: null,
            backup_limit: 10,
            startup: null,
            stop_command: null,
            node: 'local',
            created_at: now,
            updated_at: now,
          })
          .execute();

        await migrateToLatest(handle);

        const old = await db
          .selectFrom('servers')
          .select(['memory_mib', 'cpu_percent', 'disk_mib', 'pids'])
          .where('uuid', '=', uuid)
          .executeTakeFirstOrThrow();
        expect(old).toEqual({ memory_mib: 0, cpu_percent: 0, disk_mib: 0, pids: null });

        const next = randomUUID();
        await db
          .insertInto('servers')
          .values({
            uuid: next,
            uuid_short: next.slice(0, 8),
            name: 'new server',
            owner_id: user.id,
            status: null,
            backup_limit: 10,
            startup: null,
            stop_command: null,
            node: 'local',
            memory_mib: 2147483647,
            cpu_percent: 100000,
            disk_mib: 2147483647,
            pids: 4194304,
            created_at: now,
            updated_at: now,
          })
          .execute();
        expect(
          await db
            .selectFrom('servers')
            .select(['memory_mib', 'cpu_percent', 'disk_mib', 'pids'])
            .where('uuid', '=', next)
            .executeTakeFirstOrThrow(),
        ).toEqual({ memory_mib: 2147483647, cpu_percent: 100000, disk_mib: 2147483647, pids: 4194304 });
      } finally {
        await dispose();
      }
    });
  });
}
