/**
 * A container's figures, read from its cgroup (the `cgroupsPath` its spec
 * sets, so no runc call is needed): memory in use, CPU time, processes, and
 * how often the kernel's OOM killer struck. Reads only; nothing to leave
 * behind.
 *
 * Synchronous on purpose: cgroup files are made by the kernel on read and
 * never wait for a disk, so a read takes microseconds, while the thread pool
 * round trips of fs.promises cost far more (bench/containment.ts: 50
 * containers' figures in 4 ms synchronously, 170 ms through promises on a
 * busy machine).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CgroupHierarchy } from './cgroup-hierarchy.js';

export interface CgroupStats {
  /** In use, page cache that could be dropped at once (inactive files) left out: Docker's and Wings' figure. */
  readonly memoryBytes: number;
  /** CPU time of all its processes since the container started. */
  readonly cpuUsageNs: number;
  readonly pids: number;
  /** Processes the kernel killed for exceeding the memory limit. */
  readonly oomKills: number;
}

export interface CpuSample {
  readonly cpuUsageNs: number;
  /** process.hrtime.bigint() as a number, when cpuUsageNs was read. */
  readonly atNs: number;
}

/**
 * Pterodactyl's `cpu_absolute`: CPU used between two samples as a percent of
 * one core (two busy cores = 200). 0 for samples in the wrong order or
 * without time between them (a restarted container's counter starts again).
 */
export function cpuAbsolute(earlier: CpuSample, later: CpuSample): number {
  const wall = later.atNs - earlier.atNs;
  const used = later.cpuUsageNs - earlier.cpuUsageNs;
  if (wall <= 0 || used < 0) return 0;
  return Math.round((used / wall) * 100 * 1000) / 1000;
}

/** Null when the cgroup is not there (the container was deleted, or never started). */
export function readCgroupStats(hierarchy: CgroupHierarchy, cgroupsPath: string): CgroupStats | null {
  try {
    return hierarchy.version === 2 ? readV2(path.join(hierarchy.root, cgroupsPath)) : readV1(hierarchy, cgroupsPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function readV1(hierarchy: CgroupHierarchy & { version: 1 }, cgroupsPath: string): CgroupStats {
  const dir = (controller: string) => {
    const mount = hierarchy.controllers.get(controller);
    if (mount === undefined) throw new Error(`the ${controller} cgroup controller is not mounted`);
    return path.join(mount, cgroupsPath);
  };
  const memory = dir('memory');
  const usage = readNumber(path.join(memory, 'memory.usage_in_bytes'));
  const stat = readKeyed(path.join(memory, 'memory.stat'));
  const oomControl = readKeyed(path.join(memory, 'memory.oom_control'));
  const cpu = readNumber(path.join(dir('cpuacct'), 'cpuacct.usage'));
  const pids = readNumber(path.join(dir('pids'), 'pids.current'));
  return {
    memoryBytes: withoutInactiveFiles(usage, stat.get('total_inactive_file')),
    cpuUsageNs: cpu,
    pids,
    oomKills: oomControl.get('oom_kill') ?? 0,
  };
}

function readV2(dir: string): CgroupStats {
  const current = readNumber(path.join(dir, 'memory.current'));
  const stat = readKeyed(path.join(dir, 'memory.stat'));
  const events = readKeyed(path.join(dir, 'memory.events'));
  const cpu = readKeyed(path.join(dir, 'cpu.stat'));
  const pids = readNumber(path.join(dir, 'pids.current'));
  return {
    memoryBytes: withoutInactiveFiles(current, stat.get('inactive_file')),
    cpuUsageNs: (cpu.get('usage_usec') ?? 0) * 1000,
    pids,
    oomKills: events.get('oom_kill') ?? 0,
  };
}

function withoutInactiveFiles(usage: number, inactiveFile: number | undefined): number {
  return inactiveFile !== undefined && inactiveFile < usage ? usage - inactiveFile : usage;
}

function readNumber(file: string): number {
  return Number(fs.readFileSync(file, 'utf8').trim());
}

/** "key value" lines (memory.stat, memory.oom_control, memory.events, cpu.stat). */
function readKeyed(file: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const [key, value] = line.split(' ');
    if (key && value !== undefined) values.set(key, Number(value));
  }
  return values;
}
