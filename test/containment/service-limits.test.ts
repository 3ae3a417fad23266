/**
 * A confined server's limits (`server:create --memory/--cpu/--pids`, SPEC
 * 10) and its `/resources` figures through a real service, checked against
 * what the kernel says of the same processes (the container's cgroup and
 * /proc). Needs root and runc (the service refuses to start without them and
 * the tests fail with its reason).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  api,
  cgroupProcs,
  cgroupVersion,
  CLOCK_TICKS_PER_SECOND,
  containerLeftovers,
  containerProcesses,
  createServer,
  hostIdleTicks,
  hostProcesses,
  machineOverloaded,
  power,
  readCgroupFile,
  readKeyed,
  readLog,
  resources,
  sleep,
  useService,
  waitFor,
  waitState,
  type TestServer,
} from './confined-service.js';

const service = useService();
const MiB = 1024 * 1024;
const OUT_OF_MEMORY_LINE = 'server killed: out of memory';

/** CPU time of the container as its cgroup counts it, in nanoseconds. */
function cgroupCpuNs(server: TestServer): number {
  if (cgroupVersion() === 2) return (readKeyed(readCgroupFile(server, 'cpu', 'cpu.stat')).get('usage_usec') ?? 0) * 1000;
  return Number(readCgroupFile(server, 'cpuacct', 'cpuacct.usage').trim());
}

/** CPU time of the container's processes as /proc counts it (utime + stime), in nanoseconds. */
function procCpuNs(server: TestServer): number {
  const ticks = containerProcesses(server).reduce((sum, proc) => sum + proc.cpuTicks, 0);
  return (ticks * 1e9) / CLOCK_TICKS_PER_SECOND;
}

/** Memory in use as Docker and Wings count it: usage without the inactive page cache (cgroup-stats.ts). */
function cgroupMemoryBytes(server: TestServer): number {
  if (cgroupVersion() === 2) {
    const current = Number(readCgroupFile(server, 'memory', 'memory.current').trim());
    return current - (readKeyed(readCgroupFile(server, 'memory', 'memory.stat')).get('inactive_file') ?? 0);
  }
  const usage = Number(readCgroupFile(server, 'memory', 'memory.usage_in_bytes').trim());
  return usage - (readKeyed(readCgroupFile(server, 'memory', 'memory.stat')).get('total_inactive_file') ?? 0);
}

function pidsCurrent(server: TestServer): number {
  try {
    return Number(readCgroupFile(server, 'pids', 'pids.current').trim());
  } catch {
    return 0; // Not created yet, or gone.
  }
}

function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) * 1024;
}

describe('limits of a confined server', () => {
  it('--memory 64: a process allocating 400 MB is killed, the server reads offline, the log and the activity log say out of memory', async () => {
    const handle = service();
    const server = service.track(
      await createServer(handle, {
        name: 'memory hog',
        startup: `node -e 'const kept = []; for (let i = 0; i < 25; i++) kept.push(Buffer.alloc(16 * 1024 * 1024, 1)); console.log("survived")'`,
        limits: { memory: 64 },
      }),
    );
    const started = Date.now();
    await power(handle, server, 'start');
    await waitFor(
      async () => readLog(server).includes(OUT_OF_MEMORY_LINE) && (await resources(handle, server)).current_state === 'offline',
      () => `the out-of-memory end; console log:\n${readLog(server)}`,
      15_000,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    const lines = readLog(server).trimEnd().split('\n');
    expect(lines.at(-1)).toBe(OUT_OF_MEMORY_LINE);
    expect(readLog(server)).not.toContain('survived');

    let entries: { attributes: { event: string; is_api: boolean }; relationships: { actor: { object: string } } }[] = [];
    await waitFor(
      async () => {
        const res = await api(handle, 'GET', `/api/client/servers/${server.identifier}/activity?filter[event]=oom`);
        entries = (res.body as { data: typeof entries }).data;
        return entries.length > 0;
      },
      'a server:process.oom activity entry',
      5_000,
    );
    expect(entries.map((entry) => entry.attributes.event)).toEqual(['server:process.oom']);
    // Logged by the system, not by the user whose key started the server.
    expect(entries[0]!.relationships.actor.object).toBe('null_resource');
    expect(await containerLeftovers(handle, server)).toEqual([]);
  }, 60_000);

  it('--cpu 50: a busy loop uses about half a core, by its cgroup, by /proc and by /resources', async () => {
    const handle = service();
    const server = service.track(
      await createServer(handle, { name: 'busy loop', startup: 'while :; do :; done', limits: { cpu: 50 } }),
    );
    await power(handle, server, 'start');
    await waitState(handle, server, 'running');
    await sleep(500);
    expect(readCgroupFile(server, 'cpu', cgroupVersion() === 2 ? 'cpu.max' : 'cpu.cfs_quota_us').trim()).toMatch(/^50000\b/);

    const first = { cgroup: cgroupCpuNs(server), proc: procCpuNs(server), idle: hostIdleTicks(), at: process.hrtime.bigint() };
    await sleep(5_000);
    const last = { cgroup: cgroupCpuNs(server), proc: procCpuNs(server), idle: hostIdleTicks(), at: process.hrtime.bigint() };
    const wallNs = Number(last.at - first.at);
    const byCgroup = ((last.cgroup - first.cgroup) / wallNs) * 100;
    const byProc = ((last.proc - first.proc) / wallNs) * 100;
    const stats = await resources(handle, server);

    // A quota is a ceiling, not a floor: on a machine with more work than cores (the 1-minute load
    // average above the core count), or with no idle time left during the measure, other processes
    // can keep the loop well below half a core. The upper bound holds whatever the load.
    const idleCores = (last.idle - first.idle) / CLOCK_TICKS_PER_SECOND / (wallNs / 1e9);
    const busy = machineOverloaded() || idleCores < 0.1;
    const lower = busy ? 10 : 35;
    const detail = `cgroup ${byCgroup.toFixed(1)}%, /proc ${byProc.toFixed(1)}%, /resources ${stats.resources.cpu_absolute}%, idle cores ${idleCores.toFixed(2)}, load ${os.loadavg()[0]}`;
    expect(byCgroup, detail).toBeLessThan(65);
    expect(byCgroup, detail).toBeGreaterThan(lower);
    expect(byProc, detail).toBeLessThan(65);
    expect(byProc, detail).toBeGreaterThan(lower);
    // The same processes: the two counts agree within a few clock ticks.
    expect(Math.abs(byCgroup - byProc), detail).toBeLessThan(3);
    expect(stats.current_state).toBe('running');
    expect(stats.resources.cpu_absolute, detail).toBeLessThan(70);
    expect(stats.resources.cpu_absolute, detail).toBeGreaterThan(lower - 5);
    // The kernel held it back: with no quota it would never be throttled.
    if (cgroupVersion() === 1)
      expect(readKeyed(readCgroupFile(server, 'cpu', 'cpu.stat')).get('nr_throttled')).toBeGreaterThan(10);

    await power(handle, server, 'stop');
    await waitState(handle, server, 'offline', 15_000);
    expect(await containerLeftovers(handle, server)).toEqual([]);
  }, 60_000);

  it('--pids 64: forking 200 sleeps stops at 64 processes, the script sees the failures, the service stays healthy, stop ends them all', async () => {
    const handle = service();
    const fork = [
      '$| = 1;',
      "my ($started, $failed, $error) = (0, 0, '');",
      'for (1 .. 200) {',
      '  my $pid = fork();',
      '  if (!defined $pid) { $failed++; $error = "$!"; next; }',
      "  if ($pid == 0) { exec('sleep', '60'); exit 1; }",
      '  $started++;',
      '}',
      'print "fork failed: $error\\n" if $failed;',
      'print "started $started, failed $failed\\n";',
      'sleep 1000;',
    ].join('\n');
    const server = service.track(
      await createServer(handle, {
        name: 'fork bomb',
        startup: 'perl fork.pl',
        limits: { pids: 64 },
        files: { 'fork.pl': fork },
      }),
    );
    await power(handle, server, 'start');
    let most = 0;
    await waitFor(
      () => {
        most = Math.max(most, pidsCurrent(server));
        return readLog(server).includes('started ');
      },
      () => `the forks to end; console log:\n${readLog(server)}`,
      20_000,
    );
    most = Math.max(most, pidsCurrent(server));

    expect(readCgroupFile(server, 'pids', 'pids.max').trim()).toBe('64');
    expect(most).toBeLessThanOrEqual(64);
    expect(pidsCurrent(server)).toBe(64);
    const [, started, failed] = /started (\d+), failed (\d+)/.exec(readLog(server))!.map(Number);
    expect(readLog(server)).toContain('fork failed: Resource temporarily unavailable');
    expect(failed).toBeGreaterThan(100);
    expect(started! + failed!).toBe(200);
    // The kernel refused the rest: its count of forks stopped at the limit.
    expect(readKeyed(readCgroupFile(server, 'pids', 'pids.events')).get('max')).toBeGreaterThan(0);
    // Each child that was forked runs its sleep (once it has exec'd).
    const sleeps = () => containerProcesses(server).filter((proc) => proc.cmdline === 'sleep 60');
    await waitFor(
      () => sleeps().length === started,
      () => `${started} sleeps, found ${sleeps().length}`,
    );

    // The service is unharmed.
    const health = await fetch(`http://127.0.0.1:${handle.port}/health`);
    expect(health.status).toBe(200);
    expect((await api(handle, 'GET', `/api/client/servers/${server.identifier}`)).status).toBe(200);
    expect((await resources(handle, server)).current_state).toBe('running');

    await power(handle, server, 'stop');
    await waitState(handle, server, 'offline', 15_000);
    expect(await containerLeftovers(handle, server)).toEqual([]);
    expect(hostProcesses().filter((proc) => proc.uid === server.uid && proc.cmdline === 'sleep 60')).toEqual([]);
  }, 60_000);
});

describe('/resources of a confined server', () => {
  it('reports the memory, uptime and state that the cgroup and /proc show for the same processes, and zeros once offline', async () => {
    const handle = service();
    const server = service.track(
      await createServer(handle, {
        name: 'resident',
        startup: `exec perl -e '$| = 1; $x = "a" x (48 * 1024 * 1024); print "allocated\\n"; sleep 1000'`,
      }),
    );
    const startedAt = Date.now();
    await power(handle, server, 'start');
    await waitFor(
      () => readLog(server).includes('allocated'),
      () => `the allocation; console log:\n${readLog(server)}`,
    );
    // The daemon samples every couple of seconds: wait for a sample taken after the allocation.
    let stats = await resources(handle, server);
    await waitFor(
      async () => (stats = await resources(handle, server)).resources.memory_bytes > 48 * MiB,
      () => JSON.stringify(stats),
      10_000,
    );

    const pids = cgroupProcs(server);
    expect(pids.length).toBeGreaterThanOrEqual(2); // The container's first process and perl.
    const rss = pids.reduce((sum, pid) => sum + rssBytes(pid), 0);
    const cgroup = cgroupMemoryBytes(server);
    const { resources: figures } = stats;
    const detail = `resources ${figures.memory_bytes}, cgroup ${cgroup}, rss ${rss}`;
    expect(stats.current_state).toBe('running');
    expect(Math.abs(figures.memory_bytes - cgroup), detail).toBeLessThan(Math.max(4 * MiB, cgroup * 0.05));
    // The cgroup also counts the kernel's memory for the processes (page tables, cache): a little more than their RSS.
    expect(figures.memory_bytes, detail).toBeGreaterThanOrEqual(rss * 0.9);
    expect(figures.memory_bytes, detail).toBeLessThan(rss + 32 * MiB);
    expect(figures.cpu_absolute).toBeLessThan(10);
    // Network figures are the server's own veth's (docs/reference/network-and-allocations.md), tested with real traffic in test/containment/network.test.ts.
    expect(figures.uptime).toBeGreaterThan(0);
    expect(figures.uptime).toBeLessThanOrEqual(Date.now() - startedAt + 100);

    await sleep(1_200);
    const later = await resources(handle, server);
    expect(later.resources.uptime - figures.uptime).toBeGreaterThanOrEqual(1_000);
    expect(later.resources.uptime - figures.uptime).toBeLessThan(5_000);

    await power(handle, server, 'stop');
    await waitState(handle, server, 'offline', 15_000);
    const offline = await resources(handle, server);
    expect(offline.current_state).toBe('offline');
    expect(offline.resources).toMatchObject({
      memory_bytes: 0,
      cpu_absolute: 0,
      uptime: 0,
      network_rx_bytes: 0,
      network_tx_bytes: 0,
    });
    expect(await containerLeftovers(handle, server)).toEqual([]);
  }, 60_000);

  it('reports disk_bytes as the space the volume takes: allocated blocks of every entry, each inode once (du -sB1)', async () => {
    const handle = service();
    const server = service.track(await createServer(handle, { name: 'disk', files: { 'data.bin': Buffer.alloc(100_000, 7) } }));
    fs.mkdirSync(path.join(server.volumeDir, 'world'));
    fs.writeFileSync(path.join(server.volumeDir, 'world', 'level.dat'), Buffer.alloc(2_345, 1));
    fs.linkSync(path.join(server.volumeDir, 'data.bin'), path.join(server.volumeDir, 'world', 'same-inode.bin'));
    const stats = await resources(handle, server);
    expect(stats.current_state).toBe('offline');
    const du = Number(execFileSync('du', ['-sB1', server.volumeDir], { encoding: 'utf8' }).split('\t')[0]);
    expect(stats.resources.disk_bytes).toBe(du);
    // The data once (the hard link is not counted twice), plus the folders' blocks.
    expect(stats.resources.disk_bytes).toBeGreaterThanOrEqual(102_345);
    expect(stats.resources.disk_bytes).toBeLessThan(2 * 100_000);
  });
});
