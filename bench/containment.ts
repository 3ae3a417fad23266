/**
 * Containment benchmark (issue 11, docs/CONTAINMENT.md): what a container
 * costs a server's start and the service's stats polling, through the local
 * daemon the service uses (LocalDaemon.power and its usage sampler).
 *
 * - start: wall time from `power(server, 'start')` (what POST /power start
 *   awaits, after its HTTP and database work, which is the same either way)
 *   until the startup command has run (it creates a marker file in its
 *   volume; polled every millisecond), for a daemon with containment on
 *   (claim, pid file, bundle, FIFOs, `runc run --detach`) and, in the same
 *   run, alternating, one with it off (claim, pid file, `sh -c` as a new
 *   process group). Medians and p95 of RUNS each; target: at most 100 ms
 *   added at the median.
 * - stop: `power(server, 'kill')` until the daemon reports offline (for a
 *   container: its namespace gone, `runc delete`, bundle removed).
 * - stats: CONTAINERS confined servers running (`sleep`), sampled by the
 *   daemon's own sampler every 2 s; the service's CPU time over ROUNDS × 2 s
 *   with them running, against the same span with none, as a percent of one
 *   core. Target: under 1% in total. Also a figure for one sampling round.
 *
 * - network (docs/reference/network-and-allocations.md): a server network made and removed alone (namespace,
 *   veth pair, addresses, the table reloaded), RUNS each, which is what a
 *   confined start and stop now pay over issue 11's; and a TCP round trip
 *   (one byte-line echoed, PINGS in a row) and throughput (THROUGHPUT_MB
 *   sent) to the same Python server, confined behind a published port and
 *   unconfined on the host's loopback, in the same run, ten rounds
 *   alternating (bench/network-floor.ts takes the difference apart).
 *   Target: ≥ 90%.
 *
 * Needs root, runc, ip and nft. Leaves nothing behind (its servers are stopped, its
 * folder removed), except after a SIGKILL: then `runc --root <dir>/run/runc
 * list` names what to delete.
 *
 *   npm run bench:containment -- [--runs 20] [--containers 50] [--rounds 5]
 */
import { randomInt, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { DaemonServer } from '../src/daemon/daemon.js';
import { resolveContainment } from '../src/daemon/local/container/container-runtime.js';
import { LocalDaemon } from '../src/daemon/local/local-daemon.js';
import { formatMs, percentile, table } from './lib/stats.js';
import { ECHO_PY, medianRoundTripMs, throughputMBps } from './lib/tcp-echo.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    containers: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '5' },
    pings: { type: 'string', default: '2000' },
    'throughput-mb': { type: 'string', default: '200' },
  },
});
const PINGS = Number(values.pings);
/** Round-trip figures per side, taken alternately. */
const ROUND_TRIP_ROUNDS = 10;
const THROUGHPUT_MB = Number(values['throughput-mb']);
const RUNS = Number(values.runs);
const CONTAINERS = Number(values.containers);
const ROUNDS = Number(values.rounds);
const LIMITS = { memoryMiB: 1024, cpuPercent: 100, diskMiB: 0, pids: 512 };

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bench-containment-'));
const confinedDir = path.join(root, 'confined');
const unconfinedDir = path.join(root, 'unconfined');
const runtime = await resolveContainment(
  { mode: 'on', uid: 988, dataDir: confinedDir, runDir: path.join(confinedDir, 'run') },
  { warn: () => undefined },
).catch((err: unknown) => {
  console.error(String(err));
  process.exit(1);
});
const confined = new LocalDaemon(confinedDir, { containers: runtime, stopGraceMs: 2_000 });
const unconfined = new LocalDaemon(unconfinedDir, { stopGraceMs: 2_000 });
await confined.start();
await unconfined.start();

function newServer(startup: string, allocations?: DaemonServer['allocations']): DaemonServer {
  return { uuid: randomUUID(), startup, stopCommand: null, limits: LIMITS, ...(allocations ? { allocations } : {}) };
}

/** The echo server started by `daemon` with one allocation on 0.0.0.0; its port once it listens. */
async function echoServer(daemon: LocalDaemon): Promise<{ server: DaemonServer; port: number }> {
  const port = randomInt(30_000, 60_000);
  const server = newServer('exec python3 echo.py', [{ ip: '0.0.0.0', port }]);
  await daemon.prepareVolume(server);
  const file = path.join(daemon.volumeDir(server.uuid), 'echo.py');
  fs.writeFileSync(file, ECHO_PY, { mode: 0o644 });
  if (runtime) fs.chownSync(file, runtime.uid, runtime.uid);
  await daemon.power(server, 'start');
  await until(() => fs.existsSync(path.join(daemon.volumeDir(server.uuid), 'ready')), 'the echo server listens').catch(
    (err: unknown) => {
      const log = path.join(daemon === confined ? confinedDir : unconfinedDir, 'logs', `${server.uuid}.log`);
      throw new Error(`${String(err)}; its console: ${fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '(none)'}`);
    },
  );
  return { server, port };
}

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

const elapsedMs = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

async function startAndKill(daemon: LocalDaemon): Promise<{ startMs: number; stopMs: number }> {
  const server = newServer(': > marker; exec sleep 1000');
  await daemon.prepareVolume(server);
  const marker = path.join(daemon.volumeDir(server.uuid), 'marker');
  const start = process.hrtime.bigint();
  await daemon.power(server, 'start');
  await until(() => fs.existsSync(marker), 'the startup command ran');
  const startMs = elapsedMs(start);
  const stop = process.hrtime.bigint();
  await daemon.power(server, 'kill');
  await until(async () => (await daemon.state(server)) === 'offline', 'offline');
  return { startMs, stopMs: elapsedMs(stop) };
}

/** The process's CPU time over ROUNDS × 2 s, as a percent of one core. */
async function serviceCpuPercent(): Promise<number> {
  const wallStart = process.hrtime.bigint();
  const cpuStart = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, ROUNDS * 2_000));
  const cpu = process.cpuUsage(cpuStart);
  return ((cpu.user + cpu.system) / 1000 / elapsedMs(wallStart)) * 100;
}

function summary(name: string, samples: number[]): string[] {
  const sorted = [...samples].sort((a, b) => a - b);
  return [name, formatMs(percentile(sorted, 50)), formatMs(percentile(sorted, 95))];
}

const running: DaemonServer[] = [];
try {
  // One of each unmeasured: the first runc and the first spawn pay for the page cache.
  await startAndKill(confined);
  await startAndKill(unconfined);
  const inContainer = { start: [] as number[], stop: [] as number[] };
  const inGroup = { start: [] as number[], stop: [] as number[] };
  for (let run = 0; run < RUNS; run++) {
    const order = run % 2 === 0 ? [confined, unconfined] : [unconfined, confined];
    for (const daemon of order) {
      const { startMs, stopMs } = await startAndKill(daemon);
      const into = daemon === confined ? inContainer : inGroup;
      into.start.push(startMs);
      into.stop.push(stopMs);
    }
  }
  console.log(`power start until the startup command runs, and power kill until offline, ${RUNS} runs each (ms)\n`);
  console.log(
    table(
      ['', 'median', 'p95'],
      [
        summary('start, unconfined (process group)', inGroup.start),
        summary('start, confined (runc container)', inContainer.start),
        summary('kill, unconfined', inGroup.stop),
        summary('kill, confined (namespace gone, container deleted)', inContainer.stop),
      ],
    ),
  );
  const median = (samples: number[]) =>
    percentile(
      [...samples].sort((a, b) => a - b),
      50,
    );
  console.log(`\nadded at the median: ${formatMs(median(inContainer.start) - median(inGroup.start))} ms (target ≤ 100 ms)\n`);

  if (!runtime) throw new Error('containment was not resolved');
  const attachMs: number[] = [];
  const detachMs: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const uuid = randomUUID();
    const attach = process.hrtime.bigint();
    await runtime.network.attach(uuid, [{ ip: '0.0.0.0', port: randomInt(30_000, 60_000) }]);
    attachMs.push(elapsedMs(attach));
    const detach = process.hrtime.bigint();
    await runtime.network.detach(uuid);
    detachMs.push(elapsedMs(detach));
  }
  console.log(`a server network alone (namespace, veth pair, addresses, table), ${RUNS} runs (ms)\n`);
  console.log(
    table(['', 'median', 'p95'], [summary('made, with one allocation published', attachMs), summary('removed', detachMs)]),
  );
  console.log(
    `\nconfined start without the network (issue 11's), estimated: ${formatMs(median(inContainer.start) - median(attachMs))} ms at the median; ` +
      `the network adds ${formatMs(median(attachMs))} ms to a start (target ≤ 150 ms) and ${formatMs(median(detachMs))} ms to a stop\n`,
  );

  const inside = await echoServer(confined);
  const onHost = await echoServer(unconfined);
  const rows: string[][] = [];
  // Alternating, ROUND_TRIP_ROUNDS times each: one figure taken after the other drifts with the machine's load.
  const trips = { inside: [] as number[], host: [] as number[] };
  for (let round = 0; round < ROUND_TRIP_ROUNDS; round++) {
    const order = round % 2 === 0 ? (['inside', 'host'] as const) : (['host', 'inside'] as const);
    for (const where of order)
      trips[where].push(await medianRoundTripMs('127.0.0.1', (where === 'inside' ? inside : onHost).port, PINGS));
  }
  const rtt = { inside: median(trips.inside), host: median(trips.host) };
  // Throughput the same way: one 200 MB transfer each swung from 72% to 105% between runs on a quiet machine.
  const rates = { inside: [] as number[], host: [] as number[] };
  for (let round = 0; round < ROUND_TRIP_ROUNDS; round++) {
    const order = round % 2 === 0 ? (['inside', 'host'] as const) : (['host', 'inside'] as const);
    for (const where of order)
      rates[where].push(await throughputMBps('127.0.0.1', (where === 'inside' ? inside : onHost).port, THROUGHPUT_MB));
  }
  const mbps = { inside: median(rates.inside), host: median(rates.host) };
  rows.push([
    'round trip, median (µs)',
    (rtt.host * 1000).toFixed(1),
    (rtt.inside * 1000).toFixed(1),
    `${((rtt.host / rtt.inside) * 100).toFixed(0)}%`,
  ]);
  rows.push([
    'throughput (MB/s)',
    mbps.host.toFixed(0),
    mbps.inside.toFixed(0),
    `${((mbps.inside / mbps.host) * 100).toFixed(0)}%`,
  ]);
  console.log(
    `TCP to the same Python server from 127.0.0.1: ${PINGS} round trips × ${ROUND_TRIP_ROUNDS} rounds alternating (median of the rounds' medians); ${THROUGHPUT_MB} MB sent × ${ROUND_TRIP_ROUNDS} rounds alternating (median)\n`,
  );
  console.log(table(['', 'host loopback (unconfined)', 'published port (confined)', 'confined / host'], rows));
  console.log('');
  await confined.power(inside.server, 'kill');
  await unconfined.power(onHost.server, 'kill');

  const idle = await serviceCpuPercent();
  const setup = process.hrtime.bigint();
  for (let i = 0; i < CONTAINERS; i++) {
    const server = newServer('exec sleep 1000');
    await confined.power(server, 'start');
    running.push(server);
  }
  console.log(`${CONTAINERS} confined servers started in ${formatMs(elapsedMs(setup))} ms`);
  const figures = await Promise.all(running.map((server) => confined.resources(server)));
  if (figures.some((figure) => figure.state !== 'running' || figure.memoryBytes <= 0)) throw new Error('a server has no figures');
  const polling = await serviceCpuPercent();
  // The network's share of a sampling round: each server's two veth counters (sysfs), 100 rounds.
  const counters = process.hrtime.bigint();
  for (let i = 0; i < 100; i++) for (const server of running) runtime.network.counters(server.uuid);
  console.log(`the network counters of ${CONTAINERS} servers: ${formatMs(elapsedMs(counters) / 100)} ms a round`);
  // One round by hand, for its own cost: what the sampler's timer does every 2 s.
  const round = process.hrtime.bigint();
  for (const server of running) await confined.resources(server);
  const roundMs = elapsedMs(round);
  console.log(
    `the service's CPU over ${ROUNDS * 2} s: ${polling.toFixed(3)}% of one core with ${CONTAINERS} servers sampled every 2 s, ` +
      `${idle.toFixed(3)}% with none: ${(polling - idle).toFixed(3)}% for the stats (target < 1%); ` +
      `${CONTAINERS} GET /resources figures read in ${formatMs(roundMs)} ms (disk measured, memory and CPU from the sampler)`,
  );
  const teardown = process.hrtime.bigint();
  await Promise.all(running.splice(0).map((server) => confined.power(server, 'kill')));
  console.log(`${CONTAINERS} confined servers killed in ${formatMs(elapsedMs(teardown))} ms`);
} finally {
  await Promise.all(running.map((server) => confined.power(server, 'kill').catch(() => undefined)));
  await confined.close();
  await unconfined.close();
  if (runtime)
    for (const container of await runtime.runc.list())
      await runtime.runc.delete(container.id, { force: true }).catch(() => undefined);
  fs.rmSync(root, { recursive: true, force: true });
}
