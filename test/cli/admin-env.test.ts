import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { adminCommandEnv, shellQuote } from '../../src/cli/admin-env.js';

/** The first-start banner's admin command carries the environment that finds the same data (src/cli/admin-env.ts). */
describe('adminCommandEnv', () => {
  const cwd = '/srv/app';
  const sqliteIn = (dir: string) => `sqlite:${path.join(dir, 'quetzal.sqlite')}`;

  it('is empty when the defaults apply', () => {
    expect(adminCommandEnv({ dataDir: '/srv/app/data', databaseUrl: sqliteIn('/srv/app/data') }, cwd)).toBe('');
  });

  it('names DATA_DIR when it is not ./data, and DATABASE_URL when it is not the SQLite file inside it', () => {
    expect(adminCommandEnv({ dataDir: '/srv/q', databaseUrl: sqliteIn('/srv/q') }, cwd)).toBe('DATA_DIR=/srv/q ');
    expect(adminCommandEnv({ dataDir: '/srv/app/data', databaseUrl: 'postgres://u@db/q' }, cwd)).toBe(
      'DATABASE_URL=postgres://u@db/q ',
    );
    expect(adminCommandEnv({ dataDir: '/srv/q', databaseUrl: 'sqlite:/elsewhere.sqlite' }, cwd)).toBe(
      'DATA_DIR=/srv/q DATABASE_URL=sqlite:/elsewhere.sqlite ',
    );
  });

  it('quotes what the shell would otherwise split or expand', () => {
    expect(shellQuote('/srv/my data')).toBe(`'/srv/my data'`);
    expect(shellQuote(`it's$HOME`)).toBe(`'it'\\''s$HOME'`);
    expect(shellQuote('postgres://u:p@h:5432/db?options=-c%20x')).toBe(`'postgres://u:p@h:5432/db?options=-c%20x'`);
  });
});
