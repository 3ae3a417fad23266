/**
 * Containment benchmark (issue 11, docs/CONTAINMENT.md): what a container
 * costs a server's start and the service's stats polling.
 *
 * - start: wall time from "start" until the startup command has run (it
 *   creates a marker file in its volume; polled every millisecond), for a
 *   confined start (startServerContainer: the runc state check, the bundle,
 *   the console FIFO, `runc run --detach`, `runc state`) and, in the same
 *   run, alternating, an unconfined one (`sh -c` as a new process group, as
 *   spawn-server.ts does today). Medians and p95 of RUNS each; the target is
 *   at most 100 ms added at the median.
 * - stop: removeServerContainer (`runc kill --all KILL`, the first process
 *   gone, `runc delete`, the bundle removed) vs SIGKILL of a process group
 *   until its leader has been reaped.
 * - stats: CONTAINERS running containers (`sleep`), their cgroup figures read
 *   every 2 s (readCgroupStats, as a resources poller would) for ROUNDS
 *   rounds; the service's own CPU time (process.cpuUsage) over that span as
 *   a percent of one core. Target: under 1% in total.
 *
 * Needs root and runc. Leaves nothing behind (its containers are deleted,
 * its folder under the temporary folder removed), except after a SIGKILL:
 * then `runc --root <dir>/run/runc list` names what to delete.
 *
 *   npm run bench:containment -- [--runs 20] [--containers 50] [--rounds 5]
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { readCgroupStats } from '../src/daemon/local/container/cgroup-stats.js';
import { defaultCgroupsPath, type ContainerOptions } from '../src/daemon/local/container/container-spec.js';
import { detectContainment } from '../src/daemon/local/container/containment-check.js';
import { inspectHostLayout } from '../src/daemon/local/container/host-layout.js';
import { Runc } from '../src/daemon/local/container/runc.js';
import { removeServerContainer, startServerContainer } from '../src/daemon/local/container/server-container.js';
import { formatMs, percentile, table } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    containers: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '5' },
  },
});
const RUNS = Number(values.runs);
const CONTAINERS = Number(values.containers);
const ROUNDS = Number(values.rounds);
const SERVER_UID = 988;
const LIMITS = { memoryMiB: 1024, cpuPercent: 100, pids: 512 };

const check = await detectContainment();
if (!check.available) {
  console.error(`containers are not available here: ${check.reason}`);
  process.exit(1);
}
const { hierarchy } = check;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bench-containment-'));
const runDir = path.join(dataDir, 'run');
const runc = new Runc(check.runc, path.join(runDir, 'runc'));
const host = inspectHostLayout(hierarchy);
const logFd = fs.openSync(path.join(dataDir, 'console.log'), 'a');

function newVolume(): { serverUuid: string; volumeDir: string } {
  const serverUuid = randomUUID();
  const volumeDir = path.join(dataDir, 'volumes', serverUuid);
  fs.mkdirSync(volumeDir, { recursive: true });
  fs.chownSync(volumeDir, SERVER_UID, SERVER_UID);
  return { serverUuid, volumeDir };
}

function containerOptions(serverUuid: string, volumeDir: string, startup: string): ContainerOptions {
  return {
    serverUuid,
    startup,
    volumeDir,
    uid: SERVER_UID,
    gid: SERVER_UID,
    limits: LIMITS,
    cgroupsPath: defaultCgroupsPath(serverUuid),
    hiddenPaths: [dataDir],
    host,
  };
}

async function untilExists(file: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!fs.existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`${file} never appeared`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

const elapsedMs = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

async function confinedStart(): Promise<{ startMs: number; stopMs: number }> {
  const { serverUuid, volumeDir } = newVolume();
  const start = process.hrtime.bigint();
  const started = await startServerContainer(runc, runDir, containerOptions(serverUuid, volumeDir, ': > marker; exec sleep 1000'), logFd);
  await untilExists(path.join(volumeDir, 'marker'));
  const startMs = elapsedMs(start);
  started.stdin.destroy();
  const stop = process.hrtime.bigint();
  await removeServerContainer(runc, runDir, serverUuid);
  await started.exited;
  return { startMs, stopMs: elapsedMs(stop) };
}

async function unconfinedStart(): Promise<{ startMs: number; stopMs: number }> {
  const { volumeDir } = newVolume();
  const start = process.hrtime.bigint();
  const child = spawn(': > marker; exec sleep 1000', { shell: true, cwd: volumeDir, detached: true, stdio: ['pipe', logFd, logFd] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await untilExists(path.join(volumeDir, 'marker'));
  const startMs = elapsedMs(start);
  const stop = process.hrtime.bigint();
  process.kill(-child.pid!, 'SIGKILL');
  await exited;
  return { startMs, stopMs: elapsedMs(stop) };
}

/** The process's CPU time over ROUNDS rounds of `round` then 2 s of sleep, as a percent of one core. */
async function serviceCpuPercent(round: () => void): Promise<number> {
  const wallStart = process.hrtime.bigint();
  const cpuStart = process.cpuUsage();
  for (let i = 0; i < ROUNDS; i++) {
    round();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
  }
  const cpu = process.cpuUsage(cpuStart);
  return ((cpu.user + cpu.system) / 1000 / elapsedMs(wallStart)) * 100;
}

function summary(name: string, samples: number[]): string[] {
  const sorted = [...samples].sort((a, b) => a - b);
  return [name, formatMs(percentile(sorted, 50)), formatMs(percentile(sorted, 95))];
}

try {
  // One of each unmeasured: the first runc and the first spawn pay for the page cache.
  await confinedStart();
  await unconfinedStart();
  const confined = { start: [] as number[], stop: [] as number[] };
  const unconfined = { start: [] as number[], stop: [] as number[] };
  for (let run = 0; run < RUNS; run++) {
    const order = run % 2 === 0 ? [confinedStart, unconfinedStart] : [unconfinedStart, confinedStart];
    for (const start of order) {
      const { startMs, stopMs } = await start();
      const into = start === confinedStart ? confined : unconfined;
      into.start.push(startMs);
      into.stop.push(stopMs);
    }
  }
  console.log(`start until the startup command runs, and stop, ${RUNS} runs each (ms)\n`);
  console.log(
    table(
      ['', 'median', 'p95'],
      [
        summary('start, unconfined (sh -c, process group)', unconfined.start),
        summary('start, confined (runc run --detach)', confined.start),
        summary('stop, unconfined (SIGKILL the group)', unconfined.stop),
        summary('stop, confined (kill --all, delete, bundle removed)', confined.stop),
      ],
    ),
  );
  const added = percentile([...confined.start].sort((a, b) => a - b), 50) - percentile([...unconfined.start].sort((a, b) => a - b), 50);
  console.log(`\nadded at the median: ${formatMs(added)} ms (target ≤ 100 ms)\n`);

  const ids: { serverUuid: string; cgroupsPath: string }[] = [];
  const setup = process.hrtime.bigint();
  for (let i = 0; i < CONTAINERS; i++) {
    const { serverUuid, volumeDir } = newVolume();
    const started = await startServerContainer(runc, runDir, containerOptions(serverUuid, volumeDir, 'exec sleep 1000'), logFd);
    started.stdin.destroy();
    ids.push({ serverUuid, cgroupsPath: defaultCgroupsPath(serverUuid) });
  }
  console.log(`${CONTAINERS} containers started in ${formatMs(elapsedMs(setup))} ms`);
  // The same span without reading, for the service's own idle CPU (timers, GC) to set against.
  const idle = await serviceCpuPercent(() => undefined);
  const roundMs: number[] = [];
  const polling = await serviceCpuPercent(() => {
    const started = process.hrtime.bigint();
    const figures = ids.map((id) => readCgroupStats(hierarchy, id.cgroupsPath));
    if (figures.some((figure) => figure === null || figure.pids !== 2)) throw new Error('a container has no figures');
    roundMs.push(elapsedMs(started));
  });
  const medianRound = percentile([...roundMs].sort((a, b) => a - b), 50);
  console.log(
    `stats of ${CONTAINERS} containers every 2 s, ${ROUNDS} rounds: a round takes ${formatMs(medianRound)} ms (median), ` +
      `${((medianRound / 2_000) * 100).toFixed(3)}% of one core; the service's CPU while polling ${polling.toFixed(3)}%, ` +
      `idle ${idle.toFixed(3)}%: ${(polling - idle).toFixed(3)}% for the stats (target < 1%)`,
  );
  const teardown = process.hrtime.bigint();
  for (const id of ids) await removeServerContainer(runc, runDir, id.serverUuid);
  console.log(`${CONTAINERS} containers deleted in ${formatMs(elapsedMs(teardown))} ms`);
} finally {
  for (const container of await runc.list()) await runc.delete(container.id, { force: true }).catch(() => undefined);
  fs.closeSync(logFd);
  fs.rmSync(dataDir, { recursive: true, force: true });
}
