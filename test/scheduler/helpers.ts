import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { buildApp, type AppDeps } from '../../src/app.js';
import { BackgroundJobs } from '../../src/background.js';
import { systemClock } from '../../src/clock.js';
import { loadConfig, type Config } from '../../src/config.js';
import { LocalDaemon } from '../../src/daemon/local/local-daemon.js';
import { testContainment } from '../helpers/containment.js';
import type { DatabaseHandle } from '../../src/db/database.js';
import type { ScheduleRow, ServerRow } from '../../src/db/schema.js';
import { startScheduler, type SchedulerDeps, type SchedulerHandle } from '../../src/scheduler/scheduler.js';
import type { TestDatabase, TestDatabaseHandle } from '../helpers/databases.js';
import { Factories } from '../helpers/factories.js';
import { TestClock } from '../helpers/harness.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export { ECHO_STARTUP } from '../helpers/containment.js';

export interface SchedulerHarness {
  app: FastifyInstance;
  db: TestDatabaseHandle;
  deps: AppDeps;
  config: Config;
  daemon: LocalDaemon;
  clock: TestClock;
  jobs: BackgroundJobs;
  dataDir: string;
  make: Factories;
  request(token: string | null, options: InjectOptions): Promise<LightMyRequestResponse>;
  /** Starts a scheduler on the harness's database (real clock unless given); stopped after the test. */
  scheduler(overrides?: Partial<SchedulerDeps>): SchedulerHandle;
}

/**
 * The shared harness's set-up (a real app on a fresh database and DATA_DIR),
 * plus schedulers that are
 * stopped after each test. The app's own clock is a TestClock; schedulers run
 * on the real clock by default, because time offsets are waited out for real.
 */
export function useSchedulerHarness(database: TestDatabase, env: Record<string, string> = {}): SchedulerHarness {
  const h = {} as SchedulerHarness;
  const schedulers: SchedulerHandle[] = [];
  beforeAll(async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-sched-'));
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
    Object.assign(h, {
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
      scheduler: (overrides: Partial<SchedulerDeps> = {}) => {
        const handle = startScheduler({ ...deps, clock: systemClock, ...overrides });
        schedulers.push(handle);
        return handle;
      },
    });
  });
  afterEach(async () => {
    await Promise.all(schedulers.splice(0).map((s) => s.stop()));
  });
  afterAll(async () => {
    await Promise.all(schedulers.splice(0).map((s) => s.stop()));
    await h.jobs?.idle();
    await h.app?.close();
    await h.daemon?.close();
    await h.db?.dispose();
    if (h.dataDir) fs.rmSync(h.dataDir, { recursive: true, force: true });
  });
  return h;
}

export interface TaskSpec {
  action: 'command' | 'power' | 'backup' | 'delete_files';
  payload?: string;
  offset?: number;
  continueOnFailure?: boolean;
}

/** A schedule with its tasks, inserted directly (the HTTP routes are tested elsewhere). */
export async function makeSchedule(
  db: DatabaseHandle['db'],
  server: ServerRow,
  opts: {
    name?: string;
    cron?: string;
    active?: boolean;
    onlyWhenOnline?: boolean;
    nextRunAt?: number | null;
    tasks?: TaskSpec[];
    now?: number;
  } = {},
): Promise<ScheduleRow> {
  const now = opts.now ?? Date.now();
  const [minute, hour, dom, month, dow] = (opts.cron ?? '0 0 1 1 *').split(' ') as [string, string, string, string, string];
  const schedule = await db
    .insertInto('schedules')
    .values({
      server_id: server.id,
      name: opts.name ?? `schedule ${Math.random().toString(36).slice(2, 8)}`,
      cron_minute: minute,
      cron_hour: hour,
      cron_day_of_month: dom,
      cron_month: month,
      cron_day_of_week: dow,
      is_active: opts.active === false ? 0 : 1,
      is_processing: 0,
      only_when_online: opts.onlyWhenOnline ? 1 : 0,
      last_run_at: null,
      next_run_at: opts.nextRunAt === undefined ? now + 3_600_000 : opts.nextRunAt,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  let sequence = 1;
  for (const task of opts.tasks ?? []) {
    await db
      .insertInto('tasks')
      .values({
        schedule_id: schedule.id,
        sequence_id: sequence++,
        action: task.action,
        payload: task.payload ?? '',
        time_offset: task.offset ?? 0,
        is_queued: 0,
        continue_on_failure: task.continueOnFailure ? 1 : 0,
        created_at: now,
        updated_at: now,
      })
      .execute();
  }
  return schedule;
}

export interface LoggedEvent {
  event: string;
  properties: Record<string, unknown>;
  actor_id: number | null;
  ip: string | null;
  timestamp: number;
}

export async function eventsOf(db: DatabaseHandle['db'], serverId: number): Promise<LoggedEvent[]> {
  const rows = await db.selectFrom('activity_logs').selectAll().where('server_id', '=', serverId).orderBy('id').execute();
  return rows.map((r) => ({
    event: r.event,
    properties: JSON.parse(r.properties) as Record<string, unknown>,
    actor_id: r.actor_id,
    ip: r.ip,
    timestamp: r.timestamp,
  }));
}

export async function scheduleRow(db: DatabaseHandle['db'], id: number): Promise<ScheduleRow> {
  return db.selectFrom('schedules').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** Polls until `check` returns a truthy value (or throws after `timeoutMs`). */
export async function waitFor<T>(
  check: () => Promise<T | false | undefined | null> | T | false | undefined | null,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Waits for the schedule's current run to end (is_processing back to 0 with last_run_at set). */
export async function waitForRunEnd(db: DatabaseHandle['db'], scheduleId: number, timeoutMs = 10_000): Promise<ScheduleRow> {
  return waitFor(
    async () => {
      const row = await scheduleRow(db, scheduleId);
      return row.is_processing === 0 && row.last_run_at !== null ? row : null;
    },
    timeoutMs,
    `schedule ${scheduleId} to finish its run`,
  );
}

function logFileOf(dataDir: string, server: ServerRow): string {
  return path.join(dataDir, 'logs', `${server.uuid}.log`);
}

export function readLog(dataDir: string, server: ServerRow): string {
  try {
    return fs.readFileSync(logFileOf(dataDir, server), 'utf8');
  } catch {
    return '';
  }
}

// ---------------------------------------------------------------- worker processes

/**
 * How to start a scheduler-only process: the real `quetzal worker` command
 * when the CLI is there and wired to this scheduler, otherwise the small entry
 * under test/fixtures (same configuration, same startScheduler).
 */
export function workerCommand(): { args: string[]; kind: 'cli' | 'fixture' } {
  const bin = path.join(ROOT, 'bin/quetzal.js');
  const main = path.join(ROOT, 'src/main.ts');
  const wired =
    fs.existsSync(bin) &&
    fs.existsSync(main) &&
    /scheduler\/scheduler\.js/.test(fs.readFileSync(main, 'utf8')) &&
    process.env.QUETZAL_TEST_WORKER !== 'fixture';
  if (wired) return { args: [bin, 'worker'], kind: 'cli' };
  return { args: ['--import', 'tsx', path.join(ROOT, 'test/fixtures/scheduler-worker.ts')], kind: 'fixture' };
}

export interface WorkerProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code / signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function spawnWorker(env: Record<string, string>): WorkerProcess {
  const { args } = workerCommand();
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', QUETZAL_BOOTSTRAP: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => out, exited };
}

export async function stopWorker(worker: WorkerProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (worker.child.exitCode !== null || worker.child.signalCode !== null) return;
  worker.child.kill(signal);
  const timer = setTimeout(() => worker.child.kill('SIGKILL'), 10_000);
  await worker.exited;
  clearTimeout(timer);
}
