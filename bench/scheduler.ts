/**
 * Scheduler benchmark: 10,000 active schedules with one command task each, all
 * due at the same instant, on SQLite and on PostgreSQL, with one and with two
 * worker processes. Reports, from the activity log and the schedules table:
 *
 * - all started: from the due instant until the last run's `server:schedule.run`
 * - all finished: from the due instant until the last run ended (last_run_at)
 * - lateness: each run's start (its `server:schedule.run` timestamp) minus
 *   next_run_at — median, 99th percentile and worst
 * - peak RSS of each worker process
 *
 * The daemon in the workers is an in-memory stand-in (every server "running",
 * every console line accepted at once), so the figures measure the scheduler
 * and the database, not ten thousand console pipes.
 *
 *   npx tsx bench/scheduler.ts [--schedules 10000] [--only sqlite|postgres] [--workers 1,2]
 *
 * PostgreSQL: BENCH_DATABASE_URL or TEST_DATABASE_URL (a fresh schema is made
 * and dropped); skipped with a note when neither is set.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { sql } from 'kysely';
import pino from 'pino';
import { BackgroundJobs } from '../src/background.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import type { BackupArchive, Daemon, DaemonServer, PowerSignal, ServerResources, ServerState } from '../src/daemon/daemon.js';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { startScheduler } from '../src/scheduler/scheduler.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SELF = fileURLToPath(import.meta.url);

// ------------------------------------------------------------------ worker mode

/** Every server running, every console line taken at once. */
class StandInDaemon implements Daemon {
  commands = 0;
  readonly containment = 'off';
  /** The scheduler's benchmark runs no file task. */
  readonly files = {} as Daemon['files'];
  readonly images = {} as Daemon['images'];
  async install(): Promise<{ exitCode: number }> {
    return { exitCode: 0 };
  }
  async installLog(): Promise<string[]> {
    return [];
  }
  async abortInstall(): Promise<void> {}
  async installRunning(): Promise<boolean> {
    return false;
  }
  async removeServer(): Promise<void> {}
  async resources(): Promise<ServerResources> {
    return { state: 'running', memoryBytes: 0, cpuAbsolute: 0, diskBytes: 0, networkRxBytes: 0, networkTxBytes: 0, uptimeMs: 0 };
  }
  async assertStartable(): Promise<void> {}
  async diskUsage(): Promise<number> {
    return 0;
  }
  async prepareVolume(_server: DaemonServer): Promise<void> {}
  async state(_server: DaemonServer): Promise<ServerState> {
    return 'running';
  }
  async power(_server: DaemonServer, _signal: PowerSignal): Promise<void> {}
  async sendCommand(_server: DaemonServer, _line: string): Promise<void> {
    this.commands += 1;
  }
  async createBackup(): Promise<BackupArchive> {
    throw new Error('not in this benchmark');
  }
  async restoreBackup(): Promise<void> {
    throw new Error('not in this benchmark');
  }
  async recoverRestore(): Promise<'not-here'> {
    return 'not-here';
  }
  async discardRestore(): Promise<void> {}
  async listRestores(): Promise<string[]> {
    return [];
  }
  async deleteBackup(): Promise<void> {}
  async discardBackup(): Promise<void> {}
  async deleteFiles(): Promise<void> {}
  onStateChange(): () => void {
    return () => {};
  }
  onOutOfMemory(): () => void {
    return () => {};
  }
  onDiskLimit(): () => void {
    return () => {};
  }
  watchConsole(): () => void {
    return () => {};
  }
  async consoleHistory(): Promise<string[]> {
    return [];
  }
  async close(): Promise<void> {}
}

async function worker(): Promise<void> {
  const config = loadConfig();
  const logger = pino({ level: process.env.LOG_LEVEL ?? 'warn' });
  const database = openDatabase(config.databaseUrl);
  const daemon = new StandInDaemon();
  const jobs = new BackgroundJobs(logger);
  const scheduler = startScheduler({
    db: database.db,
    dialect: database.dialect,
    config,
    clock: systemClock,
    daemon,
    jobs,
    logger,
    instanceId: 'bench',
  });
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  process.on('SIGTERM', () => {
    void (async () => {
      await scheduler.stop();
      await database.close();
      process.stdout.write(`${JSON.stringify({ maxRssKb: process.resourceUsage().maxRSS, commands: daemon.commands })}\n`);
      process.exit(0);
    })();
  });
}

// ------------------------------------------------------------------ the benchmark

interface Scenario {
  database: 'sqlite' | 'postgres';
  workers: number;
}

interface Result extends Scenario {
  schedules: number;
  allStartedMs: number;
  allFinishedMs: number;
  latenessMedianMs: number;
  latenessP99Ms: number;
  latenessWorstMs: number;
  peakRssMiB: number;
  runsPerWorker: number[];
}

function option(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function openFresh(kind: Scenario['database'], pgUrl: string | undefined, dir: string) {
  if (kind === 'sqlite') {
    const url = `sqlite:${path.join(dir, 'bench.sqlite')}`;
    return { handle: openDatabase(url), url, drop: async () => {} };
  }
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const parsed = new URL(pgUrl!);
  parsed.searchParams.set('options', `-c search_path=${schema}`);
  const url = parsed.toString();
  return {
    handle: openDatabase(pgUrl!, { searchPath: schema }),
    url,
    drop: async () => {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`drop schema ${schema} cascade`);
      await c.end();
    },
  };
}

async function migrate(handle: DatabaseHandle) {
  await migrateToLatest(handle);
}

async function seed(handle: DatabaseHandle, count: number, dueAt: number) {
  const db = handle.db;
  const now = Date.now();
  const user = await db
    .insertInto('users')
    .values({ uuid: randomUUID(), username: 'bench', email: 'bench@example.test', root_admin: 1, use_totp: 0, created_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  const serverIds: number[] = [];
  for (let i = 0; i < 100; i++) {
    const uuid = randomUUID();
    const row = await db
      .insertInto('servers')
      .values({
        uuid,
        uuid_short: uuid.slice(0, 8),
        name: `bench ${i}`,
        owner_id: user.id,
        status: null,
        backup_limit: 0,
        startup: 'true',
        stop_command: null,
        node: 'local',
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    serverIds.push(row.id);
  }
  const chunk = 500;
  for (let start = 0; start < count; start += chunk) {
    const n = Math.min(chunk, count - start);
    const ids = await db
      .insertInto('schedules')
      .values(
        Array.from({ length: n }, (_, k) => ({
          server_id: serverIds[(start + k) % serverIds.length]!,
          name: `bench ${start + k}`,
          // Next match far away: each schedule runs once in the benchmark.
          cron_minute: '0',
          cron_hour: '0',
          cron_day_of_month: '1',
          cron_month: '1',
          cron_day_of_week: '*',
          is_active: 1,
          is_processing: 0,
          only_when_online: 0,
          last_run_at: null,
          next_run_at: dueAt,
          created_at: now,
          updated_at: now,
        })),
      )
      .returning('id')
      .execute();
    await db
      .insertInto('tasks')
      .values(
        ids.map(({ id }) => ({
          schedule_id: id,
          sequence_id: 1,
          action: 'command',
          payload: 'say scheduled hello',
          time_offset: 0,
          is_queued: 0,
          continue_on_failure: 0,
          created_at: now,
          updated_at: now,
        })),
      )
      .execute();
  }
}

function spawnBenchWorker(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', SELF, '--worker'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: Record<string, unknown>[] = [];
  let buffer = '';
  child.stdout.on('data', (d: Buffer) => {
    buffer += d.toString();
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not ours
      }
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, lines, exited };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

async function runScenario(scenario: Scenario, count: number, pgUrl: string | undefined): Promise<Result> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bench-'));
  const { handle, url, drop } = await openFresh(scenario.database, pgUrl, dir);
  try {
    await migrate(handle);
    const seedStart = Date.now();
    // Seeding and two worker start-ups fit comfortably in this margin.
    const dueAt = Math.ceil((seedStart + 12_000) / 1000) * 1000;
    await seed(handle, count, dueAt);
    const workers = Array.from({ length: scenario.workers }, () =>
      spawnBenchWorker({ DATABASE_URL: url, DATA_DIR: dir, LOG_LEVEL: 'warn', QUETZAL_BOOTSTRAP: 'off' }),
    );
    while (workers.some((w) => !w.lines.some((l) => l.ready))) await sleep(50);
    if (Date.now() > dueAt - 500) throw new Error('set-up took longer than the margin before the due instant');

    const deadline = dueAt + 300_000;
    for (;;) {
      const { rows } = await sql<{ n: number | string }>`
        select count(*) as n from schedules where last_run_at is not null and is_processing = 0
      `.execute(handle.db);
      if (Number(rows[0]!.n) >= count) break;
      if (Date.now() > deadline) throw new Error('runs did not finish within 5 minutes');
      await sleep(100);
    }
    for (const w of workers) w.child.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.exited));

    const starts = (
      await handle.db.selectFrom('activity_logs').select('timestamp').where('event', '=', 'server:schedule.run').execute()
    ).map((r) => Number(r.timestamp) - dueAt);
    if (starts.length !== count) throw new Error(`expected ${count} runs, saw ${starts.length}`);
    const { rows: finished } = await sql<{ last: number | string }>`select max(last_run_at) as last from schedules`.execute(
      handle.db,
    );
    starts.sort((a, b) => a - b);
    const stats = workers.map((w) => w.lines.find((l) => 'maxRssKb' in l) as { maxRssKb: number; commands: number } | undefined);
    return {
      ...scenario,
      schedules: count,
      allStartedMs: starts[starts.length - 1]!,
      allFinishedMs: Number(finished[0]!.last) - dueAt,
      latenessMedianMs: percentile(starts, 50),
      latenessP99Ms: percentile(starts, 99),
      latenessWorstMs: starts[starts.length - 1]!,
      peakRssMiB: Math.round(Math.max(...stats.map((s) => (s?.maxRssKb ?? 0) / 1024))),
      runsPerWorker: stats.map((s) => s?.commands ?? 0),
    };
  } finally {
    await handle.close();
    await drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const count = Number(option('schedules') ?? 10_000);
  const only = option('only');
  const workerCounts = (option('workers') ?? '1,2').split(',').map(Number);
  const pgUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  const databases = (['sqlite', 'postgres'] as const).filter((d) => !only || only === d);
  const results: Result[] = [];
  for (const database of databases) {
    if (database === 'postgres' && !pgUrl) {
      console.log('PostgreSQL skipped: set BENCH_DATABASE_URL or TEST_DATABASE_URL.');
      continue;
    }
    for (const workers of workerCounts) {
      process.stderr.write(`${database}, ${workers} worker(s), ${count} schedules...\n`);
      results.push(await runScenario({ database, workers }, count, pgUrl));
    }
  }

  const header = [
    'database',
    'workers',
    'schedules',
    'all started',
    'all finished',
    'lateness median',
    'lateness p99',
    'lateness worst',
    'peak RSS',
    'runs per worker',
  ];
  const table = results.map((r) => [
    r.database,
    String(r.workers),
    String(r.schedules),
    `${r.allStartedMs} ms`,
    `${r.allFinishedMs} ms`,
    `${r.latenessMedianMs} ms`,
    `${r.latenessP99Ms} ms`,
    `${r.latenessWorstMs} ms`,
    `${r.peakRssMiB} MiB`,
    r.runsPerWorker.join(' + '),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of table) console.log(line(row));
  console.log(
    JSON.stringify({
      bench: 'scheduler',
      node: process.version,
      cpus: os.cpus().length,
      cpu: os.cpus()[0]?.model ?? 'unknown',
      results,
    }),
  );
}

if (process.argv.includes('--worker')) {
  await worker();
} else {
  await main();
}
