import { configDefaults, defineConfig } from 'vitest/config';

// Said once per run (the test workers would each say it): what runs without PostgreSQL.
if (!process.env.TEST_DATABASE_URL?.trim()) {
  console.warn('PostgreSQL tests skipped: set TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to run them.');
}

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Test files in one worker share its loaded modules (measured: the suite's import time fell
    // from ~140 s to ~10 s, its CPU by a quarter). Every test builds what it uses (a harness, a
    // DATA_DIR, a database of its own) and module state is only caches, so nothing leaks between files.
    isolate: false,
    // Like Laravel's BCRYPT_ROUNDS=4 in phpunit.xml: the suite hashes thousands of passwords and
    // measures none (src/modules/users/passwords.ts); processes the tests start inherit it.
    env: { PASSWORD_HASH_COST: '10' },
    // Two cores on CI: parallel files beyond that only add contention.
    maxWorkers: 2,
    reporters: ['default'],
    // The browser's tests run after all others. Chromium aborts every request in flight, loopback
    // included, when an address or interface of its network namespace changes, and the
    // containment, network and install tests make and remove servers' veth pairs all along:
    // beside them a page load failed with ERR_NETWORK_CHANGED now and then (test/e2e/helpers.ts,
    // signIn, loads again when it sees one; docs/DECISIONS.md, "The test suite's time").
    projects: [
      {
        extends: true,
        test: {
          name: 'service',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/e2e/**'],
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: 'browser', include: ['test/e2e/**/*.test.ts'], sequence: { groupOrder: 1 } } },
    ],
  },
});
