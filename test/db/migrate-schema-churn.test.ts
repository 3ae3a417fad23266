/**
 * Migrating one schema while other schemas of the same PostgreSQL database
 * come and go (other deployments, other test files): Kysely's migrator used to
 * introspect every schema by name and fail with "schema ... does not exist"
 * when one vanished under it (src/db/migrate.ts, withOwnSchemaIntrospection).
 * It runs in a database of its own, so that its churn cannot disturb the other
 * test files' schemas (nor their own uses of Kysely's introspection).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { TEST_DATABASE_URL } from '../helpers/databases.js';

const postgres = TEST_DATABASE_URL;
if (!postgres) console.warn('migration schema-churn test skipped: it needs PostgreSQL; set TEST_DATABASE_URL to run it.');

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

describe.skipIf(!postgres)('migrations while other schemas are dropped', () => {
  it('migrate every fresh schema, however many other schemas vanish meanwhile', { timeout: 60_000 }, async () => {
    const database = `quetzal_churn_${randomBytes(4).toString('hex')}`;
    await withClient(postgres as string, (client) => client.query(`create database ${database}`));
    const parsed = new URL(postgres as string);
    parsed.pathname = `/${database}`;
    const url = parsed.toString();
    try {
      await churnAndMigrate(url);
    } finally {
      await withClient(postgres as string, (client) => client.query(`drop database if exists ${database} with (force)`));
    }
  });
});

async function churnAndMigrate(url: string): Promise<void> {
  let stop = false;
  let dropped = 0;
  // Two connections creating and dropping schemas (with a serial column, as Kysely's introspection reads them) in a tight loop.
  const churn = () =>
    withClient(url, async (client) => {
      while (!stop) {
        const schema = `churn_${randomBytes(4).toString('hex')}`;
        await client.query(`create schema ${schema}; create table ${schema}.t (id serial primary key)`);
        await client.query(`drop schema ${schema} cascade`);
        dropped += 1;
      }
    });
  const churners = [churn(), churn()];
  const failures: string[] = [];
  try {
    for (let round = 0; round < 12; round += 1) {
      const schema = `mig_${randomBytes(4).toString('hex')}`;
      await withClient(url, (client) => client.query(`create schema ${schema}`));
      const handle = openDatabase(url, { searchPath: schema, poolSize: 2 });
      try {
        await migrateToLatest(handle);
      } catch (err) {
        failures.push((err as Error).message);
      } finally {
        await handle.close();
        await withClient(url, (client) => client.query(`drop schema ${schema} cascade`));
      }
    }
  } finally {
    stop = true;
    await Promise.all(churners);
  }
  expect(failures).toEqual([]);
  expect(dropped).toBeGreaterThan(50);
}
