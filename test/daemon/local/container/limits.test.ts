/**
 * A container's limits (docs/reference/containment.md) hold against real processes, and its
 * figures (cgroup-stats.ts) agree with what /proc says of the same processes.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cpuAbsolute, readCgroupStats, type CgroupStats } from '../../../../src/daemon/local/container/cgroup-stats.js';
import { cgroupProcs, readLog, sleep, startProbe, useSandbox, waitFor, type ProbeContainer } from './helpers.js';

const sandbox = useSandbox();
const CLOCK_TICKS_PER_SECOND = 100;

function stats(probe: ProbeContainer): CgroupStats {
  const figures = readCgroupStats(sandbox().hierarchy, probe.cgroupsPath);
  if (figures === null) throw new Error(`no cgroup at ${probe.cgroupsPath}`);
  return figures;
}

function sample(figures: CgroupStats) {
  return { cpuUsageNs: figures.cpuUsageNs, atNs: Number(process.hrtime.bigint()) };
}

/** utime + stime of a process, in nanoseconds. */
function procCpuNs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e9) / CLOCK_TICKS_PER_SECOND;
}

/** nr_throttled of the container's cpu.stat: periods in which the quota stopped it. */
function throttledPeriods(probe: ProbeContainer): number {
  const { hierarchy } = sandbox();
  const dir = hierarchy.version === 2 ? hierarchy.root : hierarchy.controllers.get('cpu');
  const stat = fs.readFileSync(path.join(dir!, probe.cgroupsPath, 'cpu.stat'), 'utf8');
  return Number(/^nr_throttled (\d+)$/m.exec(stat)?.[1]);
}

function procRssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) * 1024;
}

describe('container limits', () => {
  it('kills a process that passes the memory limit, and counts the OOM kill', async () => {
    const probe = await startProbe(
      sandbox(),
      // The limit as the container sees it (v1, else v2), so a JVM can size its heap from it.
      'echo "limit=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max)"; ' +
        `perl -e '$x = "a" x (400 * 1024 * 1024); print "survived\\n"'; echo "exit $?"; exec sleep 1000`,
      { memoryMiB: 64, cpuPercent: 0, pids: 0 },
    );
    await waitFor(() => /exit \d+/.test(readLog(probe)), 'the allocation to end', 10_000);
    expect(readLog(probe)).toContain(`limit=${64 * 1024 * 1024}\n`);
    expect(readLog(probe)).toContain('exit 137');
    expect(readLog(probe)).not.toContain('survived');
    const figures = stats(probe);
    expect(figures.oomKills).toBeGreaterThanOrEqual(1);
    expect(figures.memoryBytes).toBeLessThanOrEqual(64 * 1024 * 1024);
  });

  it('holds a busy loop at --cpu 50 near half a core', async () => {
    const probe = await startProbe(sandbox(), 'while :; do :; done', { memoryMiB: 0, cpuPercent: 50, pids: 0 });
    await sleep(500);
    const busyMachine = os.loadavg()[0]! > os.cpus().length;
    const first = sample(stats(probe));
    await sleep(5_000);
    const percent = cpuAbsolute(first, sample(stats(probe)));
    expect(percent).toBeLessThan(65);
    // The kernel held it back: with no quota it would never be throttled. (How often depends on how much CPU the
    // loop could get at all: on a loaded CI machine it was 5 or 6 periods in 5 s, on a quiet one hundreds.)
    expect(throttledPeriods(probe)).toBeGreaterThan(0);
    // Near half a core, unless other work leaves it less than that to take (a shared CI machine).
    expect(percent).toBeGreaterThan(busyMachine ? 10 : 35);
  });

  it('stops forks at the pids limit', async () => {
    const probe = await startProbe(
      sandbox(),
      `exec perl -e '$| = 1; my $n = 0; for (1..200) { my $p = fork(); last unless defined $p; if (!$p) { sleep 1000; exit } $n++ } print "forked $n\\n"; sleep 1000'`,
      { memoryMiB: 0, cpuPercent: 0, pids: 64 },
    );
    await waitFor(() => readLog(probe).includes('forked'), 'the forks to stop', 10_000);
    // The init shell, perl and perl's children: 64 in all.
    expect(readLog(probe)).toContain('forked 62');
    expect(stats(probe).pids).toBe(64);
  });

  it('reports figures that agree with /proc for the same processes', async () => {
    const probe = await startProbe(
      sandbox(),
      `exec perl -e '$| = 1; $x = "a" x (48 * 1024 * 1024); print "allocated\\n"; my $t = time + 3; while (time < $t) {} print "idle\\n"; sleep 1000'`,
    );
    await waitFor(() => readLog(probe).includes('allocated'), 'the allocation');
    const pids = cgroupProcs(sandbox().hierarchy, probe.cgroupsPath);
    // The init shell (the container's first process) and perl.
    expect(pids).toHaveLength(2);
    expect(pids).toContain(probe.pid);
    const perl = pids.find((pid) => pid !== probe.pid)!;
    const before = stats(probe);
    const procBefore = procCpuNs(perl) + procCpuNs(probe.pid);
    await waitFor(() => readLog(probe).includes('idle'), 'the busy seconds', 10_000);
    const after = stats(probe);
    const procAfter = procCpuNs(perl) + procCpuNs(probe.pid);
    // The cgroup counts in nanoseconds, /proc in clock ticks (10 ms): they agree to within a few ticks.
    expect(Math.abs(after.cpuUsageNs - before.cpuUsageNs - (procAfter - procBefore))).toBeLessThan(100e6);
    // Enough CPU time for the comparison to mean something even on a busy machine.
    expect(after.cpuUsageNs - before.cpuUsageNs).toBeGreaterThan(300e6);
    const rss = procRssBytes(perl) + procRssBytes(probe.pid);
    expect(rss).toBeGreaterThan(48 * 1024 * 1024);
    // The cgroup also counts the kernel's memory for the process (page tables, its files' cache): a little more.
    expect(after.memoryBytes).toBeGreaterThanOrEqual(rss * 0.9);
    expect(after.memoryBytes).toBeLessThan(rss + 32 * 1024 * 1024);
    expect(after.pids).toBe(2);
    expect(after.oomKills).toBe(0);
  });

  it('has no figures once the container is deleted', async () => {
    const probe = await startProbe(sandbox(), 'exec sleep 1000');
    // The first process, then the startup command it forks a moment later (on a loaded machine, not at once).
    await waitFor(() => stats(probe).pids === 2, 'the startup command to run', 5_000);
    await sandbox().runc.delete(probe.id, { force: true });
    expect(readCgroupStats(sandbox().hierarchy, probe.cgroupsPath)).toBeNull();
  });
});
