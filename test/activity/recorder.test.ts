import { Migrator, sql, type Kysely, type Migration } from 'kysely';
import { expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { withOwnSchemaIntrospection } from '../../src/db/migrate.js';
import { initialMigration } from '../../src/db/migrations/001_initial.js';
import { activityMigration } from '../../src/db/migrations/002_activity.js';
import { TEST_DATABASE_URL } from '../helpers/databases.js';
import type { ServerRow } from '../../src/db/schema.js';
import { createActivityLogIndexes, dropActivityLogIndexes, rebuildActivityIndex } from '../../src/db/migrations/002_activity.js';
import { recordActivities, recordActivity, SYSTEM_ACTOR, type Actor } from '../../src/modules/activity/activity.recorder.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { expectActivityInvariants, randomEntries, randomSource } from './helpers.js';

const T0 = Date.parse('2026-02-01T00:00:00Z');

/** Everything derived from the entries, named by values rather than ids (which a rebuild renumbers). */
async function derivedState(db: ReturnType<typeof useHarness>['db']['db']) {
  const rows = await sql<Record<string, unknown>>`
    select l.id, l.seq, l.event_seq, l.ip_seq, l.actor_seq, l.timestamp,
      te.term as event, ti.term as ip, ta.term as actor,
      fe.term as facet_event, fi.term as facet_ip, fa.term as facet_actor
    from activity_logs l
    join activity_terms te on te.id = l.event_term
    join activity_terms ti on ti.id = l.ip_term
    join activity_terms ta on ta.id = l.actor_term
    join activity_facets f on f.id = l.facet_id
    join activity_terms fe on fe.id = f.event_term
    join activity_terms fi on fi.id = f.ip_term
    join activity_terms fa on fa.id = f.actor_term
    order by l.id
  `.execute(db);
  const terms = await db
    .selectFrom('activity_terms')
    .select(['server_id', 'kind', 'term', 'folded', 'last_seq', 'total'])
    .orderBy('server_id')
    .orderBy('kind')
    .orderBy('term')
    .execute();
  const facets = await sql<Record<string, unknown>>`
    select f.server_id, te.term as e, ti.term as i, ta.term as a, f.total from activity_facets f
    join activity_terms te on te.id = f.event_term join activity_terms ti on ti.id = f.ip_term join activity_terms ta on ta.id = f.actor_term
    order by f.server_id, te.term, ti.term, ta.term
  `.execute(db);
  const servers = await db.selectFrom('activity_servers').selectAll().orderBy('server_id').execute();
  const plain = (list: unknown[]) =>
    JSON.parse(JSON.stringify(list, (_k, v: unknown) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v)));
  return { rows: plain(rows.rows), terms: plain(terms), facets: plain(facets.rows), servers: plain(servers) };
}

describeEachDatabase('activity recorder', (database) => {
  const h = useHarness(database);

  it('writes the state a rebuild from the entries alone derives (the benchmark loads data that way)', async () => {
    const rand = randomSource(7);
    const owner = await h.make.user();
    const servers = [await h.make.server(owner.user), await h.make.server(owner.user)];
    const actors: Actor[] = [SYSTEM_ACTOR, { userId: owner.user.id, apiKeyId: 1, ip: null }];
    const entries = randomEntries(
      rand,
      400,
      servers.map((s) => s.id),
      actors,
      T0,
    );
    for (let i = 0; i < entries.length; i += 37) await recordActivities(h.db.db, entries.slice(i, i + 37));
    await expectActivityInvariants(h.db.db);
    const recorded = await derivedState(h.db.db);

    await dropActivityLogIndexes(h.db.db);
    await h.db.db.deleteFrom('activity_facets').execute();
    await h.db.db.deleteFrom('activity_terms').execute();
    await h.db.db.deleteFrom('activity_servers').execute();
    await h.db.db
      .updateTable('activity_logs')
      .set({ seq: 0, event_term: 0, event_seq: 0, ip_term: 0, ip_seq: 0, actor_term: 0, actor_seq: 0, facet_id: 0 })
      .execute();
    await rebuildActivityIndex(h.db.db);
    await createActivityLogIndexes(h.db.db, h.db.dialect);

    await expectActivityInvariants(h.db.db);
    expect(await derivedState(h.db.db)).toEqual(recorded);
  });

  it('keeps every server gapless and consistent under concurrent bulk writers in any server order', async () => {
    const owner = await h.make.user();
    const servers: ServerRow[] = [];
    for (let i = 0; i < 5; i++) servers.push(await h.make.server(owner.user));
    const actors: Actor[] = [SYSTEM_ACTOR, { userId: owner.user.id, apiKeyId: 1, ip: null }];
    // On SQLite the writers share one handle: better-sqlite3 waits for a lock synchronously, so two
    // handles in one process would block each other; SQLite serialises writers with its lock anyway.
    const writers = Array.from({ length: 6 }, async (_, w) => {
      const rand = randomSource(100 + w);
      const db = h.db.db;
      for (let b = 0; b < 15; b++) {
        const order = [...servers].sort(() => rand.next() - 0.5).map((s) => s.id);
        const batch = randomEntries(rand, rand.int(1, 12), order, actors, T0 + b * 1000);
        if (rand.chance(0.3)) {
          // Inside a caller's transaction, with a write of its own before.
          await db.transaction().execute(async (trx) => {
            await trx.updateTable('servers').set({ updated_at: T0 }).where('id', '=', batch[0]!.serverId).execute();
            await recordActivities(trx, batch);
          });
        } else await recordActivities(db, batch);
      }
    });
    await Promise.all(writers);
    await expectActivityInvariants(h.db.db);
  });

  it("writes nothing, and leaves no gap, when the caller's transaction rolls back", async () => {
    const { server } = await h.make.ownedServer();
    await recordActivity(h.db.db, { serverId: server.id, event: 'server:test.one', actor: SYSTEM_ACTOR, timestamp: T0 });
    await expect(
      h.db.db.transaction().execute(async (trx) => {
        await recordActivity(trx, {
          serverId: server.id,
          event: 'server:test.rolled-back',
          actor: SYSTEM_ACTOR,
          timestamp: T0 + 1,
        });
        throw new Error('change failed');
      }),
    ).rejects.toThrow('change failed');
    await recordActivity(h.db.db, { serverId: server.id, event: 'server:test.two', actor: SYSTEM_ACTOR, timestamp: T0 + 2 });
    const rows = await h.db.db
      .selectFrom('activity_logs')
      .select(['event', 'seq'])
      .where('server_id', '=', server.id)
      .orderBy('seq')
      .execute();
    expect(rows.map((r) => [r.event, Number(r.seq)])).toEqual([
      ['server:test.one', 1],
      ['server:test.two', 2],
    ]);
    const terms = await h.db.db
      .selectFrom('activity_terms')
      .select('term')
      .where('server_id', '=', server.id)
      .where('kind', '=', 1)
      .execute();
    expect(terms.map((t) => t.term).sort()).toEqual(['server:test.one', 'server:test.two']);
    await expectActivityInvariants(h.db.db);
  });
});

describeEachDatabase('activity migration 002', (database) => {
  /** An empty database of this kind, not migrated. */
  async function bare(): Promise<{ handle: DatabaseHandle; dispose(): Promise<void> }> {
    if (database.name === 'sqlite') {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-mig-'));
      const handle = openDatabase(`sqlite:${path.join(dir, 'db.sqlite')}`);
      return {
        handle,
        dispose: async () => {
          await handle.close();
          fs.rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    const schema = `m_${randomBytes(5).toString('hex')}`;
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    const handle = openDatabase(TEST_DATABASE_URL!, { searchPath: schema, poolSize: 2 });
    return {
      handle,
      dispose: async () => {
        await handle.close();
        await admin.query(`drop schema ${schema} cascade`);
        await admin.end();
      },
    };
  }

  async function migrate(handle: DatabaseHandle, migrations: Record<string, Migration>) {
    const migrator = new Migrator({
      db: withOwnSchemaIntrospection(handle),
      provider: { getMigrations: async () => migrations },
      ...(handle.schema ? { migrationTableSchema: handle.schema } : {}),
    });
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
  }

  it('derives the listing structures from the entries written before it', async () => {
    const { handle, dispose } = await bare();
    try {
      const db = handle.db as unknown as Kysely<any>;
      await migrate(handle, { '001_initial': initialMigration(handle.dialect) });
      const now = Date.parse('2026-01-01T00:00:00Z');
      await db
        .insertInto('users')
        .values({ uuid: randomUUID(), username: 'u', email: 'u@example.test', created_at: now })
        .execute();
      const user = await db.selectFrom('users').select('id').executeTakeFirstOrThrow();
      for (const name of ['a', 'b']) {
        const uuid = randomUUID();
        await db
          .insertInto('servers')
          .values({ uuid, uuid_short: uuid.slice(0, 8), name, owner_id: user.id, created_at: now, updated_at: now })
          .execute();
      }
      const servers = (await db.selectFrom('servers').select('id').orderBy('id').execute()).map((r) => r.id as number);
      const rand = randomSource(3);
      const rows = Array.from({ length: 120 }, (_, i) => ({
        server_id: servers[i % 2]!,
        event: rand.pick(['server:power.start', 'server:Backup.start', 'server:schedule.run']),
        ip: rand.chance(0.3) ? null : rand.pick(['10.0.0.1', 'FE80::1']),
        actor_id: rand.chance(0.4) ? null : user.id,
        properties: '{}',
        // Out of order on purpose: the listing orders by (timestamp, id).
        timestamp: now + rand.int(0, 50) * 1000,
      }));
      await db.insertInto('activity_logs').values(rows).execute();

      await migrate(handle, {
        '001_initial': initialMigration(handle.dialect),
        '002_activity': activityMigration(handle.dialect),
      });
      await expectActivityInvariants(handle.db, { insertionOrder: false });
      for (const serverId of servers) {
        const bySeq = await handle.db
          .selectFrom('activity_logs')
          .select('id')
          .where('server_id', '=', serverId)
          .orderBy('seq')
          .execute();
        const byTime = await handle.db
          .selectFrom('activity_logs')
          .select('id')
          .where('server_id', '=', serverId)
          .orderBy('timestamp')
          .orderBy('id')
          .execute();
        expect(bySeq).toEqual(byTime);
      }
    } finally {
      await dispose();
    }
  });
});
