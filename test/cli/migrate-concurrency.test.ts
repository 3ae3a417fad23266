import { afterEach, expect, it } from 'vitest';
import { createSandbox, describeEachDialect, quetzal, type CliSandbox } from './helpers.js';

/**
 * docs/reference/cli.md: commands "migrate a fresh database themselves", and several
 * instances may start together. Four `quetzal migrate` processes racing on one
 * fresh database must all succeed (on SQLite, Kysely takes no migration lock of
 * its own: src/db/migrate.ts adds one), and the schema must be migrated once.
 */
describeEachDialect('migrating one fresh database from several processes at once', (dialect) => {
  const boxes: CliSandbox[] = [];
  afterEach(async () => {
    await Promise.all(boxes.splice(0).map((box) => box.dispose()));
  });

  it('every process succeeds, five rounds in a row', async () => {
    for (let round = 0; round < 5; round++) {
      const box = await createSandbox(dialect);
      boxes.push(box);
      const results = await Promise.all([0, 1, 2, 3].map(() => quetzal(['migrate', '--json'], box.env)));
      for (const result of results) {
        expect(result.code, result.stderr).toBe(0);
        expect(JSON.parse(result.stdout)).toEqual({ migrated: true });
      }
      const applied = await box
        .db()
        .db.selectFrom('kysely_migration' as never)
        .selectAll()
        .execute();
      expect(applied.map((m) => (m as { name: string }).name)).toEqual([
        '001_initial',
        '002_activity',
        '003_scheduler',
        '004_change_generations',
        '005_file_operations',
        '006_server_limits',
        '007_passwords_sessions',
        '008_allocations',
        '009_server_uid_inodes',
        '010_eggs',
        '011_accounts_databases',
        '012_database_creations',
      ]);
    }
  }, 60_000);
});
