/**
 * Migration 008 (allocations, docs/reference/network-and-allocations.md) on a database that already has
 * servers: they keep working, with no allocation and an allocation limit of 0.
 * The table's rules hold on both databases: one row per address and port, and
 * a deleted server's allocations are freed, not deleted.
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
import { serverLimitsMigration } from '../../src/db/migrations/006_server_limits.js';
import { passwordsSessionsMigration } from '../../src/db/migrations/007_passwords_sessions.js';
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
    const schema = `m008_${randomBytes(6).toString('hex')}`;
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
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-m008-'));
  const handle = openDatabase(`sqlite:${path.join(dir, 'test.sqlite')}`);
  return {
    handle,
    async dispose() {
      await handle.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function migrateTo007(handle: DatabaseHandle) {
  const migrations: Record<string, Migration> = {
    '001_initial': initialMigration(handle.dialect),
    '002_activity': activityMigration(handle.dialect),
    '003_scheduler': schedulerMigration(handle.dialect),
    '004_change_generations': changeGenerationsMigration(handle.dialect),
    '005_file_operations': fileOperationsMigration(handle.dialect),
    '006_server_limits': serverLimitsMigration(handle.dialect),
    '007_passwords_sessions': passwordsSessionsMigration(handle.dialect),
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
  describe(`migration 008_allocations [${dialect}]`, () => {
    it('gives existing servers no allocation and a limit of 0; one row per address and port; a deleted server frees its own', async () => {
      const { handle, dispose } = await freshDatabase(dialect);
      try {
        await migrateTo007(handle);
        const db = handle.db;
        const now = Date.now();
        const user = await db
          .insertInto('users')
          .values({ uuid: randomUUID(), username: 'old', email: 'old@example.com', root_admin: 0, use_totp: 0, created_at: now })
          .returning('id')
          .executeTakeFirstOrThrow();
        const uuid = randomUUID();
        // Only the columns that existed before 008.
        const server = await db
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
          .returning('id')
          .executeTakeFirstOrThrow();

        await migrateToLatest(handle);

        expect(
          await db
            .selectFrom('servers')
            .select(['allocation_id', 'allocation_limit'])
            .where('id', '=', server.id)
            .executeTakeFirstOrThrow(),
        ).toEqual({ allocation_id: null, allocation_limit: 0 });

        const row = (port: number, serverId: number | null) => ({
          ip: '127.0.0.1',
          ip_alias: null,
          port,
          server_id: serverId,
          notes: null,
          created_at: now,
          updated_at: now,
        });
        const held = await db.insertInto('allocations').values(row(25565, server.id)).returning('id').executeTakeFirstOrThrow();
        await db.updateTable('servers').set({ allocation_id: held.id }).where('id', '=', server.id).execute();
        await expect(db.insertInto('allocations').values(row(25565, null)).execute()).rejects.toThrow(/unique/i);
        await db
          .insertInto('allocations')
          .values({ ...row(25565, null), ip: '0.0.0.0' })
          .execute();

        await db.deleteFrom('servers').where('id', '=', server.id).execute();
        expect(
          await db.selectFrom('allocations').select(['port', 'server_id']).where('id', '=', held.id).executeTakeFirstOrThrow(),
        ).toEqual({
          port: 25565,
          server_id: null,
        });
      } finally {
        await dispose();
      }
    });
  });
}
