import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { adminCommandEnv } from '../../src/cli/admin-env.js';
import { describeEachDialect, getJson, startService, useSandbox } from './helpers.js';

/** First start (docs/reference/cli.md): the real `quetzal serve` against an empty database. */

/** Child processes are slow on a busy two-core machine: be patient with whole scenarios. */
const SPAWN_TIMEOUT_MS = 120_000;
const TOKEN = /^ptlc_[A-Za-z0-9]{43}$/;

describeEachDialect('quetzal serve: first start', (dialect) => {
  const box = useSandbox(dialect);

  it(
    'creates the admin, the demo server and one key once, even when two instances start together',
    async () => {
      // Both also migrate the fresh database at once (see migrate-concurrency.test.ts).
      const services = await Promise.all([startService('serve', box.env), startService('serve', box.env)]);
      try {
        const announced = services.filter((s) => s.stdout().includes('Quetzal first start'));
        expect(announced).toHaveLength(1);
        const output = announced[0]!.stdout();
        const token = /Authorization: Bearer (ptlc_[A-Za-z0-9]{43})/.exec(output)?.[1];
        expect(token).toMatch(TOKEN);
        expect(output).toContain(`curl -H "Authorization: Bearer ${token}"`);
        expect(output).toContain(`${announced[0]!.url}/api/client`);
        // And how to reach the web console, which needs a password the first start does not set.
        // With the environment it needs: run from another shell, the default DATA_DIR would be a second database.
        const prefix = adminCommandEnv({ dataDir: box.dataDir, databaseUrl: box.env.DATABASE_URL! });
        expect(prefix).toContain(`DATA_DIR=${box.dataDir} `);
        expect(output).toContain(`    ${prefix}npx quetzal user:password --user admin\n`);
        // The key line and the curl line; never a log line.
        expect(output.split(token!).length - 1).toBe(2);
        expect(output.split('\n').filter((l) => l.startsWith('{') && l.includes(token!))).toEqual([]);

        const file = path.join(box.dataDir, 'initial-api-key');
        expect(fs.readFileSync(file, 'utf8')).toBe(`${token}\n`);
        expect(fs.statSync(file).mode & 0o777).toBe(0o600);

        const listing = await getJson(`${services[1]!.url}/api/client`, token!);
        expect(listing.status).toBe(200);
        expect(listing.body.data.map((s: any) => s.attributes.name)).toEqual(['demo']);
        const users = await box.db().db.selectFrom('users').selectAll().execute();
        expect(users.map((u) => [u.username, u.email, u.root_admin])).toEqual([['admin', 'admin@localhost', 1]]);
        expect(await box.db().db.selectFrom('api_keys').select('id').execute()).toHaveLength(1);
      } finally {
        expect(await Promise.all(services.map((s) => s.stop('SIGTERM')))).toEqual([0, 0]);
      }

      const again = await startService('serve', box.env);
      expect(await again.stop('SIGINT')).toBe(0);
      expect(again.stdout()).not.toContain('Quetzal first start');
      expect(await box.db().db.selectFrom('users').select('id').execute()).toHaveLength(1);
      expect(await box.db().db.selectFrom('servers').select('id').execute()).toHaveLength(1);
    },
    SPAWN_TIMEOUT_MS,
  );
});
