import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe } from 'vitest';
import { openDatabase, type DatabaseHandle, type DialectName } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';

/**
 * The database matrix: every HTTP-level test runs once per database. SQLite
 * always; PostgreSQL when TEST_DATABASE_URL names one. Each test file gets a
 * database of its own (a fresh SQLite file, or a fresh PostgreSQL schema).
 */
export interface TestDatabase {
  name: DialectName;
  /** Opens (and migrates) a fresh, empty database. */
  open(): Promise<TestDatabaseHandle>;
}

export interface TestDatabaseHandle extends DatabaseHandle {
  /** A DATABASE_URL that reaches the same database, for child processes. */
  url: string;
  /** Extra environment a child process needs to see the same data (the PG schema). */
  env: Record<string, string>;
  dispose(): Promise<void>;
}

const sqlite: TestDatabase = {
  name: 'sqlite',
  async open() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-db-'));
    const url = `sqlite:${path.join(dir, 'test.sqlite')}`;
    const handle = openDatabase(url);
    await migrateToLatest(handle);
    return {
      ...handle,
      url,
      env: {},
      async dispose() {
        await handle.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

function postgres(baseUrl: string): TestDatabase {
  return {
    name: 'postgres',
    async open() {
      const schema = `t_${randomBytes(6).toString('hex')}`;
      const admin = new pg.Client({ connectionString: baseUrl });
      await admin.connect();
      await admin.query(`CREATE SCHEMA ${schema}`);
      await admin.end();
      const handle = openDatabase(baseUrl, { searchPath: schema, poolSize: 5 });
      await migrateToLatest(handle);
      const url = withSearchPath(baseUrl, schema);
      return {
        ...handle,
        url,
        env: {},
        async dispose() {
          await handle.close();
          const cleanup = new pg.Client({ connectionString: baseUrl });
          await cleanup.connect();
          await cleanup.query(`DROP SCHEMA ${schema} CASCADE`);
          await cleanup.end();
        },
      };
    },
  };
}

/** A postgres:// URL whose connections use `schema` (libpq's `options` parameter). */
export function withSearchPath(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('options', `-c search_path=${schema}`);
  return parsed.toString();
}

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL?.trim() || undefined;

export const testDatabases: TestDatabase[] = [sqlite, ...(TEST_DATABASE_URL ? [postgres(TEST_DATABASE_URL)] : [])];

// Without TEST_DATABASE_URL the matrix is SQLite only; vitest.config.ts says so once per run.

/** `describe` once per database in the matrix. */
export function describeEachDatabase(title: string, body: (database: TestDatabase) => void) {
  for (const database of testDatabases) {
    describe(`${title} [${database.name}]`, () => body(database));
  }
}
