/**
 * HTTP benchmark (issue #3, item 3). On loopback, with autocannon in a
 * process of its own:
 *
 * - the authenticated `GET /api/client/servers/{server}/activity` first page
 *   (25 of 1,000 entries written through the activity recorder), served by
 *   the real service (`bin/quetzal.js serve`, from the bundle `npm start`
 *   runs: SQLite, the local daemon, the scheduler off), against a bare
 *   Fastify app serving the same 25-entry body on the same route (bench/http-lib/bare-server.ts), in the same run, in
 *   rotating order; requests per second, p50 and p99 latency, and each
 *   server process's RSS;
 * - the same service with its rendered-listing cache off (`ACTIVITY_CACHE_MB=0`,
 *   a second instance on the same database): every request queries and renders;
 * - the cached service while this process writes 20 entries a second to the
 *   served log (as another instance would), so the cache must render again
 *   after each write;
 * - schedule create (`POST .../schedules`) and task update
 *   (`POST .../schedules/{schedule}/tasks/{task}`) on the real service.
 *
 * Targets: the real app at ≥ 50% of the bare app's requests per second, p99
 * ≤ 10 ms at 10 connections.
 *
 *   npm run bench:http -- [--duration 10] [--connections 10] [--rounds 3] [--entries 1000]
 *                          [--log-level warn] [--cpu-prof <dir>] [--no-writes]
 *
 * Both servers log at the same level (default warn: no per-request lines;
 * `--log-level info` is the service's default, one line per request and
 * response, written to /dev/null here). `--cpu-prof <dir>` starts the real
 * service under `node --cpu-prof`, writing its profile into <dir> on exit.
 * With 2 cores, autocannon and the server under test share the machine: the
 * bare app's figure is partly autocannon's own ceiling.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { LocalDaemon } from '../src/daemon/local/local-daemon.js';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { recordActivity, SYSTEM_ACTOR, type Actor } from '../src/modules/activity/activity.recorder.js';
import { createApiKey } from '../src/modules/keys/keys.service.js';
import { createServer } from '../src/modules/servers/servers.service.js';
import { createUser } from '../src/modules/users/users.repository.js';
import { memoryOf } from './lib/memory.js';
import { freePort } from './lib/ports.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const AUTOCANNON = createRequire(import.meta.url).resolve('autocannon/autocannon.js');

// ------------------------------------------------------------------ options

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  const value = index >= 0 ? Number(process.argv[index + 1]) : fallback;
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
}

function stringOption(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

const DURATION = option('duration', 10);
const CONNECTIONS = option('connections', 10);
const ROUNDS = option('rounds', 3);
const ENTRIES = option('entries', 1000);
const LOG_LEVEL = stringOption('log-level') ?? 'warn';
const CPU_PROF = stringOption('cpu-prof');
const WRITES = !process.argv.includes('--no-writes');
const WARMUP = 3;
/** Entries written to the served log per second during the "busy" load. */
const BUSY_WRITES_PER_SECOND = 20;

// ------------------------------------------------------------------ processes

interface Server {
  name: string;
  process: ChildProcess;
  url: string;
  exited: Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function startServer(
  name: string,
  args: string[],
  env: Record<string, string>,
  probe: { path: string; token: string },
): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode} before it listened`);
    try {
      const res = await fetch(`${url}${probe.path}`, { headers: { authorization: `Bearer ${probe.token}` } });
      await res.arrayBuffer();
      if (res.ok) break;
      throw new Error(`${name}: GET ${probe.path} answered ${res.status}`);
    } catch (err) {
      if (err instanceof Error && err.message.includes('answered')) throw err;
      if (Date.now() > deadline) throw new Error(`${name} did not start listening within 60 s`);
      await sleep(100);
    }
  }
  return { name, process: child, url, exited };
}

async function stopServer(server: Server): Promise<void> {
  server.process.kill('SIGTERM');
  await Promise.race([server.exited, sleep(10_000)]);
  if (server.process.exitCode === null && server.process.signalCode === null) server.process.kill('SIGKILL');
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU time (user + system) a process has used so far, in ms: unlike requests per second, not skewed by other work on the machine. */
function cpuMsOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

// ------------------------------------------------------------------ load

interface Load {
  method?: 'GET' | 'POST';
  body?: unknown;
  duration: number;
}

interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  /** The server process's CPU time per request, in µs. */
  cpuUsPerRequest: number;
  rssMiB: number;
}

/** autocannon's CLI in a process of its own, so that the load generator never shares the server's event loop. */
function autocannon(url: string, token: string, load: Load): Promise<Record<string, unknown>> {
  const args = [
    AUTOCANNON,
    '-c',
    String(CONNECTIONS),
    '-d',
    String(load.duration),
    '-n',
    '--json',
    '-H',
    `authorization=Bearer ${token}`,
    '-H',
    'accept=application/json',
  ];
  if (load.method) args.push('-m', load.method);
  if (load.body !== undefined) args.push('-H', 'content-type=application/json', '-b', JSON.stringify(load.body));
  args.push(url);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited with ${code}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as Record<string, unknown>);
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  });
}

async function measure(server: Server, requestPath: string, token: string, load: Load): Promise<LoadResult> {
  const cpuBefore = cpuMsOf(server.process.pid!);
  const result = await autocannon(`${server.url}${requestPath}`, token, load);
  const cpuMs = cpuMsOf(server.process.pid!) - cpuBefore;
  const requests = result.requests as { average: number; total: number };
  const latency = result.latency as { p50: number; p99: number };
  const failed = Number(result.non2xx ?? 0) + Number(result.errors ?? 0) + Number(result.timeouts ?? 0);
  if (failed > 0)
    throw new Error(
      `${server.name} ${load.method ?? 'GET'} ${requestPath}: ${failed} requests failed (non-2xx, errors or timeouts)`,
    );
  return {
    requestsPerSecond: requests.total / load.duration,
    p50Ms: latency.p50,
    p99Ms: latency.p99,
    requests: requests.total,
    cpuUsPerRequest: (cpuMs * 1000) / requests.total,
    rssMiB: memoryOf(server.process.pid!).rssMiB,
  };
}

// ------------------------------------------------------------------ data

const EVENTS: Array<[string, (i: number) => Record<string, unknown>]> = [
  ['server:console.command', (i) => ({ command: `say hello ${i}` })],
  ['server:power.start', () => ({})],
  ['server:power.stop', () => ({})],
  ['server:backup.start', (i) => ({ name: `Backup ${i}`, locked: i % 5 === 0 })],
  ['server:backup.complete', (i) => ({ name: `Backup ${i}` })],
  ['server:schedule.create', (i) => ({ name: `Schedule ${i}` })],
  ['server:task.update', (i) => ({ name: `Schedule ${i}`, action: 'command', payload: 'say tick' })],
  ['server:file.write', (i) => ({ file: `/plugins/config-${i}.yml` })],
  ['server:schedule.run', (i) => ({ name: `Schedule ${i}` })],
];

async function seed(databaseUrl: string, dataDir: string) {
  const handle = openDatabase(databaseUrl);
  await migrateToLatest(handle);
  const daemon = new LocalDaemon(dataDir);
  await daemon.start();
  const now = Date.now();
  const owner = await createUser(handle.db, { username: 'bench', email: 'bench@example.test', rootAdmin: false, now });
  const { token, row: key } = await createApiKey(handle.db, { userId: owner.id, description: 'bench', allowedIps: [], now });
  const server = await createServer(handle.db, daemon, { ownerId: owner.id, name: 'bench', now });
  const user: Actor = { userId: owner.id, apiKeyId: key.id, ip: '127.0.0.1' };
  for (let i = 0; i < ENTRIES; i++) {
    const [event, properties] = EVENTS[i % EVENTS.length]!;
    const actor =
      i % 4 === 3
        ? SYSTEM_ACTOR
        : {
            ...user,
            ip: i % 3 === 0 ? `203.0.113.${i % 250}` : i % 3 === 1 ? `2001:db8::${(i % 4096).toString(16)}` : '127.0.0.1',
          };
    await recordActivity(handle.db, {
      serverId: server.id,
      event,
      actor,
      properties: properties(i),
      timestamp: now - (ENTRIES - i) * 60_000,
    });
  }
  await daemon.close();
  await handle.close();
  return { token, serverShort: server.uuid_short, serverId: server.id, actor: user };
}

/**
 * Runs `load` while this process writes activity entries to the served server's
 * log through the recorder, as another instance would, BUSY_WRITES_PER_SECOND a second.
 */
async function whileWriting<T>(
  databaseUrl: string,
  target: { serverId: number; actor: Actor },
  load: () => Promise<T>,
): Promise<T> {
  const handle = openDatabase(databaseUrl);
  let written = 0;
  let writing = Promise.resolve();
  const timer = setInterval(() => {
    writing = writing.then(async () => {
      await recordActivity(handle.db, {
        serverId: target.serverId,
        event: 'server:console.command',
        actor: target.actor,
        properties: { command: `say busy ${written}` },
        timestamp: Date.now(),
      });
      written += 1;
    });
  }, 1000 / BUSY_WRITES_PER_SECOND);
  try {
    return await load();
  } finally {
    clearInterval(timer);
    await writing;
    await handle.close();
    if (written === 0) throw new Error('the busy load wrote nothing');
  }
}

// ------------------------------------------------------------------ report

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows
    .map((row) => row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '))
    .join('\n');
}

async function main(): Promise<void> {
  // The service is measured as `npm start` runs it: from the bundle.
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build.js')], { stdio: 'inherit' });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bench-http-'));
  const servers: Server[] = [];
  try {
    const dataDir = path.join(root, 'data');
    const databaseUrl = `sqlite:${path.join(root, 'bench.sqlite')}`;
    const { token, serverShort, serverId, actor } = await seed(databaseUrl, dataDir);
    const base = `/api/client/servers/${serverShort}`;
    const activityPath = `${base}/activity`;

    const realArgs = [
      ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(CPU_PROF)}`] : []),
      path.join(ROOT, 'bin', 'quetzal.js'),
      'serve',
    ];
    const serviceEnv = {
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      HOST: '127.0.0.1',
      SFTP_PORT: '0',
      // One base for the pagination links, whatever port each instance listens on.
      APP_URL: 'http://panel.example.test',
      SCHEDULER: 'off',
      QUETZAL_BOOTSTRAP: 'off',
      LOG_LEVEL,
      RATE_LIMIT_PER_MINUTE: '1000000',
    };
    const real = await startServer('real', realArgs, serviceEnv, { path: activityPath, token });
    servers.push(real);
    // The same service with the rendered-listing cache off: every request queries and renders.
    const uncached = await startServer(
      'real, cache off',
      [path.join(ROOT, 'bin', 'quetzal.js'), 'serve'],
      { ...serviceEnv, ACTIVITY_CACHE_MB: '0' },
      { path: activityPath, token },
    );
    servers.push(uncached);

    // The bare app serves exactly the real first page.
    const firstPage = await fetch(`${real.url}${activityPath}`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
    });
    const firstBody = (await firstPage.json()) as { data: unknown[] };
    if (firstPage.status !== 200 || firstBody.data.length !== 25)
      throw new Error(`GET activity: ${firstPage.status}, ${firstBody.data?.length} entries`);
    const bodyFile = path.join(root, 'first-page.json');
    fs.writeFileSync(bodyFile, JSON.stringify(firstBody));
    const bare = await startServer(
      'bare',
      ['--import', 'tsx', path.join(ROOT, 'bench', 'http-lib', 'bare-server.ts')],
      { BARE_BODY_FILE: bodyFile, LOG_LEVEL },
      { path: activityPath, token },
    );
    servers.push(bare);
    const bareBody = (await (await fetch(`${bare.url}${activityPath}`)).json()) as unknown;
    if (!isDeepStrictEqual(bareBody, firstBody)) throw new Error('the bare app does not serve the real first page');
    const uncachedBody = (await (
      await fetch(`${uncached.url}${activityPath}`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as unknown;
    if (!isDeepStrictEqual(uncachedBody, firstBody)) throw new Error('the service with its cache off serves another first page');
    console.error(
      `first page: ${Buffer.byteLength(JSON.stringify(firstBody))} bytes, 25 of ${ENTRIES} entries; real ${real.url} (pid ${real.process.pid}), bare ${bare.url} (pid ${bare.process.pid})`,
    );

    // A schedule with one task, for the task update load.
    const headers = { authorization: `Bearer ${token}`, accept: 'application/json', 'content-type': 'application/json' };
    const scheduleBody = {
      name: 'bench',
      minute: '*/5',
      hour: '*',
      day_of_month: '*',
      month: '*',
      day_of_week: '*',
      is_active: true,
    };
    const created = await fetch(`${real.url}${base}/schedules`, { method: 'POST', headers, body: JSON.stringify(scheduleBody) });
    const scheduleId = ((await created.json()) as { attributes: { id: number } }).attributes.id;
    const taskBody = { action: 'command', payload: 'say tick', time_offset: 0 };
    const task = await fetch(`${real.url}${base}/schedules/${scheduleId}/tasks`, {
      method: 'POST',
      headers,
      body: JSON.stringify(taskBody),
    });
    const taskId = ((await task.json()) as { attributes: { id: number } }).attributes.id;
    if (!scheduleId || !taskId) throw new Error('could not create the schedule and task for the write loads');

    for (const server of [bare, real, uncached]) await measure(server, activityPath, token, { duration: WARMUP });

    interface Round {
      bare: LoadResult;
      real: LoadResult;
      uncached: LoadResult;
      busy: LoadResult;
      scheduleCreate: LoadResult | undefined;
      taskUpdate: LoadResult | undefined;
    }
    const rounds: Round[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const order = [
        [bare, real, uncached],
        [real, uncached, bare],
        [uncached, bare, real],
      ][i % 3]!;
      const results = new Map<Server, LoadResult>();
      for (const server of order) results.set(server, await measure(server, activityPath, token, { duration: DURATION }));
      // The cached service while its log is written to, as on a busy server: each write makes the next request render again.
      const busy = await whileWriting(databaseUrl, { serverId, actor }, () =>
        measure(real, activityPath, token, { duration: DURATION }),
      );
      const scheduleCreate = WRITES
        ? await measure(real, `${base}/schedules`, token, { method: 'POST', body: scheduleBody, duration: DURATION })
        : undefined;
      const taskUpdate = WRITES
        ? await measure(real, `${base}/schedules/${scheduleId}/tasks/${taskId}`, token, {
            method: 'POST',
            body: { action: 'command', payload: 'say tock', time_offset: 5 },
            duration: DURATION,
          })
        : undefined;
      const round = {
        bare: results.get(bare)!,
        real: results.get(real)!,
        uncached: results.get(uncached)!,
        busy,
        scheduleCreate,
        taskUpdate,
      };
      rounds.push(round);
      console.error(
        `round ${i + 1}/${ROUNDS}: bare ${round.bare.requestsPerSecond.toFixed(0)} req/s, real ${round.real.requestsPerSecond.toFixed(0)} req/s ` +
          `(${((100 * round.real.requestsPerSecond) / round.bare.requestsPerSecond).toFixed(0)}%), p99 ${round.real.p99Ms} ms; ` +
          `cache off ${round.uncached.requestsPerSecond.toFixed(0)} req/s (${((100 * round.uncached.requestsPerSecond) / round.bare.requestsPerSecond).toFixed(0)}%); ` +
          (scheduleCreate && taskUpdate
            ? `schedule create ${scheduleCreate.requestsPerSecond.toFixed(0)}/s, task update ${taskUpdate.requestsPerSecond.toFixed(0)}/s`
            : 'writes skipped'),
      );
    }
    const peak = {
      bare: memoryOf(bare.process.pid!).peakRssMiB,
      real: memoryOf(real.process.pid!).peakRssMiB,
      uncached: memoryOf(uncached.process.pid!).peakRssMiB,
    };

    const ratios = rounds.map((r) => r.real.requestsPerSecond / r.bare.requestsPerSecond);
    const uncachedRatios = rounds.map((r) => r.uncached.requestsPerSecond / r.bare.requestsPerSecond);
    const busyRatios = rounds.map((r) => r.busy.requestsPerSecond / r.bare.requestsPerSecond);
    const row = (label: string, results: LoadResult[], peakRss?: number) => [
      label,
      median(results.map((r) => r.requestsPerSecond)).toFixed(0),
      median(results.map((r) => r.p50Ms)).toFixed(1),
      median(results.map((r) => r.p99Ms)).toFixed(1),
      median(results.map((r) => r.cpuUsPerRequest)).toFixed(0),
      median(results.map((r) => r.rssMiB)).toFixed(0),
      peakRss === undefined ? '' : peakRss.toFixed(0),
    ];
    console.log(
      `\nloopback, autocannon -c ${CONNECTIONS} -d ${DURATION} in its own process, ${ROUNDS} rounds (medians), log level ${LOG_LEVEL}, ` +
        `${os.cpus().length} CPUs, node ${process.version}\n`,
    );
    console.log(
      table([
        ['', 'req/s', 'p50 (ms)', 'p99 (ms)', 'server CPU/req (µs)', 'RSS (MiB)', 'peak RSS (MiB)'],
        row(
          'GET /activity, bare Fastify',
          rounds.map((r) => r.bare),
          peak.bare,
        ),
        row(
          'GET /activity, real app',
          rounds.map((r) => r.real),
          peak.real,
        ),
        row(
          'GET /activity, real app, cache off',
          rounds.map((r) => r.uncached),
          peak.uncached,
        ),
        row(
          `GET /activity, real app, ${BUSY_WRITES_PER_SECOND} log writes/s`,
          rounds.map((r) => r.busy),
        ),
        ...(WRITES
          ? [
              row(
                'POST /schedules (create)',
                rounds.map((r) => r.scheduleCreate!),
              ),
              row(
                'POST /tasks/{id} (update)',
                rounds.map((r) => r.taskUpdate!),
              ),
            ]
          : []),
      ]),
    );
    // CPU per request: what each server would do on a core of its own, whatever else ran meanwhile.
    const cpuRatios = rounds.map((r) => r.bare.cpuUsPerRequest / r.real.cpuUsPerRequest);
    const percents = (values: number[]) => values.map((r) => `${(100 * r).toFixed(0)}%`).join(', ');
    console.log(
      `\nreal / bare req/s: ${percents(ratios)} (median ${(100 * median(ratios)).toFixed(0)}%; target >= 50%, p99 <= 10 ms)` +
        `\nreal with the listing cache off / bare req/s: ${percents(uncachedRatios)} (median ${(100 * median(uncachedRatios)).toFixed(0)}%)` +
        `\nreal with ${BUSY_WRITES_PER_SECOND} log writes/s / bare req/s: ${percents(busyRatios)} (median ${(100 * median(busyRatios)).toFixed(0)}%)` +
        `\nbare / real server CPU per request: ${cpuRatios.map((r) => `${(100 * r).toFixed(0)}%`).join(', ')} (median ${(100 * median(cpuRatios)).toFixed(0)}%)\n`,
    );
    const summary = (results: LoadResult[]) => ({
      requestsPerSecond: Math.round(median(results.map((r) => r.requestsPerSecond))),
      p50Ms: median(results.map((r) => r.p50Ms)),
      p99Ms: median(results.map((r) => r.p99Ms)),
      cpuUsPerRequest: Math.round(median(results.map((r) => r.cpuUsPerRequest))),
      rssMiB: Math.round(median(results.map((r) => r.rssMiB))),
    });
    console.log(
      JSON.stringify({
        bench: 'http',
        connections: CONNECTIONS,
        durationS: DURATION,
        rounds: ROUNDS,
        logLevel: LOG_LEVEL,
        bare: { ...summary(rounds.map((r) => r.bare)), peakRssMiB: Math.round(peak.bare) },
        real: { ...summary(rounds.map((r) => r.real)), peakRssMiB: Math.round(peak.real) },
        realCacheOff: { ...summary(rounds.map((r) => r.uncached)), peakRssMiB: Math.round(peak.uncached) },
        realToBare: Number(median(ratios).toFixed(3)),
        realCacheOffToBare: Number(median(uncachedRatios).toFixed(3)),
        realBusy: summary(rounds.map((r) => r.busy)),
        realBusyToBare: Number(median(busyRatios).toFixed(3)),
        busyWritesPerSecond: BUSY_WRITES_PER_SECOND,
        realToBareByCpu: Number(median(cpuRatios).toFixed(3)),
        ...(WRITES
          ? {
              scheduleCreate: summary(rounds.map((r) => r.scheduleCreate!)),
              taskUpdate: summary(rounds.map((r) => r.taskUpdate!)),
            }
          : {}),
        targets: { realToBare: 0.5, p99Ms: 10 },
      }),
    );
  } finally {
    await Promise.all(servers.map(stopServer));
    fs.rmSync(root, { recursive: true, force: true });
  }
}

await main();
