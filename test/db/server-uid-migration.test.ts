/**
 * Migration 009 (a uid slot per server, inode limits) on a database that
 * already has servers: each gets a slot of its own (0, 1, 2 in id order) and
 * the default inode limit (null); new servers take the lowest free slot, and
 * the unique index refuses a shared one. Migrated to 007 first with the
 * service's own migrations, then brought up to date by migrateToLatest.
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
import { insertServer } from '../../src/modules/servers/servers.repository.js';
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
    const schema = `m009_${randomBytes(6).toString('hex')}`;
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
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-m009-'));
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
  describe(`migration 009_server_uid_inodes [${dialect}]`, () => {
    it('gives existing servers slots of their own; new ones take the lowest free slot; a shared slot is refused', async () => {
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
        const row = (name: string) => {
          const uuid = randomUUID();
          return {
            uuid,
            uuid_short: uuid.slice(0, 8),
            name,
            owner_id: user.id,
            status: null,
            backup_limit: 10,
            startup: null,
            stop_command: null,
            node: 'local',
            created_at: now,
            updated_at: now,
          };
        };
        const old = [row('a'), row('b'), row('c')];
        // Only the columns that existed before 009.
        for (const values of old) await db.insertInto('servers').values(values).execute();

        await migrateToLatest(handle);

        const slots = await db.selectFrom('servers').select(['uuid', 'uid_slot', 'inodes']).orderBy('id').execute();
        expect(slots).toEqual(old.map((values, slot) => ({ uuid: values.uuid, uid_slot: slot, inodes: null })));

        expect((await insertServer(db, row('d'))).uid_slot).toBe(3);
        await db.deleteFrom('servers').where('uuid', '=', old[1]!.uuid).execute();
        expect((await insertServer(db, row('e'))).uid_slot).toBe(1);
        expect((await insertServer(db, row('f'))).uid_slot).toBe(4);
        await db.deleteFrom('servers').where('uuid', '=', old[0]!.uuid).execute();
        expect((await insertServer(db, row('g'))).uid_slot).toBe(0);

        await expect(
          db
            .insertInto('servers')
            .values({ ...row('h'), uid_slot: 2 })
            .execute(),
        ).rejects.toThrow();
      } finally {
        await dispose();
      }
    });
  });
}
