import { defineConfig } from 'vitest/config';

// Said once per run (the test workers would each say it): what runs without PostgreSQL.
if (!process.env.TEST_DATABASE_URL?.trim()) {
  console.warn('PostgreSQL tests skipped: set TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to run them.');
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Like Laravel's BCRYPT_ROUNDS=4 in phpunit.xml: the suite hashes thousands of passwords and
    // measures none (src/modules/users/passwords.ts); processes the tests start inherit it.
    env: { PASSWORD_HASH_COST: '10' },
    // Two cores on CI: parallel files beyond that only add contention.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
