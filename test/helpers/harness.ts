import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import { buildApp, type AppDeps } from '../../src/app.js';
import { BackgroundJobs } from '../../src/background.js';
import { loadConfig, type Config } from '../../src/config.js';
import { LocalDaemon } from '../../src/daemon/local/local-daemon.js';
import { testContainment } from './containment.js';
import type { TestDatabase, TestDatabaseHandle } from './databases.js';
import { Factories } from './factories.js';

/** A clock tests can set and move. Starts at the real time so cron results look natural. */
export class TestClock {
  current = Date.now();
  now = () => this.current;
  set(ms: number) {
    this.current = ms;
  }
  advance(ms: number) {
    this.current += ms;
  }
}

export interface Harness {
  app: FastifyInstance;
  db: TestDatabaseHandle;
  deps: AppDeps;
  config: Config;
  daemon: LocalDaemon;
  clock: TestClock;
  jobs: BackgroundJobs;
  dataDir: string;
  make: Factories;
  /** Sends a request with a bearer token. */
  request(token: string | null, options: InjectOptions): Promise<LightMyRequestResponse>;
}

/**
 * A real app on a fresh database and a fresh DATA_DIR, built once per describe
 * block. Tests create their own rows through `make`, so they never depend on
 * one another.
 */
export function useHarness(database: TestDatabase, env: Record<string, string> = {}): Harness {
  const harness = {} as Harness;
  beforeAll(async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-data-'));
    const db = await database.open();
    const config = loadConfig({
      DATA_DIR: dataDir,
      DATABASE_URL: db.url,
      RATE_LIMIT_PER_MINUTE: '100000',
      LOG_LEVEL: 'silent',
      APP_URL: 'http://quetzal.test',
      ...env,
    });
    const clock = new TestClock();
    const daemon = new LocalDaemon(dataDir, { stopGraceMs: 500, containers: await testContainment(dataDir) });
    await daemon.start();
    const jobs = new BackgroundJobs({ error: () => {} });
    const deps: AppDeps = { db: db.db, dialect: db.dialect, config, clock, daemon, jobs };
    const app = await buildApp(deps, { logger: false });
    await app.ready();
    Object.assign(harness, {
      app,
      db,
      deps,
      config,
      daemon,
      clock,
      jobs,
      dataDir,
      make: new Factories(deps),
      request: (token: string | null, options: InjectOptions) =>
        app.inject({
          ...options,
          headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(options.headers ?? {}) },
        }),
    });
  });
  afterAll(async () => {
    await harness.jobs?.idle();
    await harness.app?.close();
    await harness.daemon?.close();
    await harness.db?.dispose();
    if (harness.dataDir) fs.rmSync(harness.dataDir, { recursive: true, force: true });
  });
  return harness;
}
