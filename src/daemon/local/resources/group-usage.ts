/**
 * What an unconfined server uses: its process group (every process whose
 * /proc/<pid>/stat names `pgid` as its group), summed. A confined server's
 * figures come from its cgroup instead (container/cgroup-stats.ts).
 *
 * A group has no kernel counter of its own, so every process on the machine
 * has to be looked at to find its members. One pass over /proc serves every
 * group read in the same synchronous run (the sampler reads all its servers
 * in one loop), so a round over 50 servers costs one pass, not 50; the pass
 * is forgotten on the next tick, so a later read always looks again.
 *
 * Synchronous on purpose, as cgroup-stats.ts: procfs files are made by the
 * kernel on read and never wait for a disk. Each stat file is read into one
 * reused buffer and parsed as bytes, without a string or array per process.
 * (proc.ts's parser does not fit: it splits the text into an array per call
 * and reads none of the figures.)
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

export interface GroupUsage {
  /** Resident set size of the group's processes. */
  readonly memoryBytes: number;
  /** CPU time (user + system) of the group's processes and of the children they reaped. */
  readonly cpuUsageNs: number;
}

interface GroupTotals {
  /** Members neither zombie nor dead. */
  readonly live: number[];
  cpuTicks: number;
}

/** Totals of every process group on the machine, from one pass over /proc; null outside such a pass's tick. */
let pass: Map<number, GroupTotals> | null = null;

let pageSize: number | undefined;
let nsPerTick: number | undefined;

/**
 * The group's figures now, or null when no process of the group lives (all
 * gone, or only zombies left). Throws when there is no /proc.
 *
 * CPU counts each member's own time (fields 14 and 15 of stat) and the time
 * of the children it reaped (fields 16 and 17), so a busy child reaped by a
 * member of the group does not take its time with it. A process reaped from
 * outside the group (the leader, by the supervisor; an orphan, by init)
 * takes its time with it: the sum can go down, and the sampler then reports
 * 0 for that interval. Children a member spawned into another group and
 * reaped count too, as `time` would count them.
 *
 * Memory is RSS: statm's resident pages of each live member, read after
 * the pass finds the members. Not field 24 of stat, which holds the same
 * counter: the kernel keeps it in per-CPU parts, and recent kernels (seen on
 * 6.18) sum them for statm and status but not for stat, which was a few
 * hundred KiB off VmRSS. Pages shared between members (a forked server's
 * code) count once per member, as `ps` shows them.
 */
export function readGroupUsage(pgid: number): GroupUsage | null {
  const totals = scanProc().get(pgid);
  if (totals === undefined || totals.live.length === 0) return null;
  let residentPages = 0;
  for (const pid of totals.live) residentPages += readResidentPages(pid);
  return { memoryBytes: residentPages * systemPageSize(), cpuUsageNs: totals.cpuTicks * systemNsPerTick() };
}

const READ_BUFFER = Buffer.alloc(4096);
const SPACE = 0x20;
const NEWLINE = 0x0a;
const CLOSE_PAREN = 0x29;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const ZOMBIE = 0x5a; // 'Z'
const DEAD = 0x58; // 'X'
const DEAD_OLD = 0x78; // 'x', before Linux 3.13

function scanProc(): Map<number, GroupTotals> {
  if (pass !== null) return pass;
  const groups = new Map<number, GroupTotals>();
  for (const name of fs.readdirSync('/proc')) {
    const first = name.charCodeAt(0);
    if (first < DIGIT_0 || first > DIGIT_9) continue;
    addProcess(groups, name);
  }
  pass = groups;
  process.nextTick(forgetPass);
  return groups;
}

function forgetPass(): void {
  pass = null;
}

/** Reads a procfs file into READ_BUFFER: its length, or -1 when the process is gone (ENOENT, ESRCH) or hidden from us. */
function readProcFile(file: string): number {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      return fs.readSync(fd, READ_BUFFER, 0, READ_BUFFER.length, 0);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return -1;
  }
}

/** Field 2 of /proc/<pid>/statm; 0 for a process gone since the pass. */
function readResidentPages(pid: number): number {
  const length = readProcFile(`/proc/${pid}/statm`);
  let i = 0;
  while (i < length && READ_BUFFER[i] !== SPACE) i++;
  let pages = 0;
  for (i++; i < length; i++) {
    const c = READ_BUFFER[i];
    if (c < DIGIT_0 || c > DIGIT_9) break;
    pages = pages * 10 + (c - DIGIT_0);
  }
  return pages;
}

/** Adds /proc/<pid>/stat's figures to its group's totals; a process gone meanwhile is skipped. */
function addProcess(groups: Map<number, GroupTotals>, pid: string): void {
  const length = readProcFile(`/proc/${pid}/stat`);
  const buf = READ_BUFFER;
  // Field 2, the command name, is in parentheses and may itself hold spaces and ')': fields 3 on follow the last ')'.
  let paren = length - 1;
  while (paren >= 0 && buf[paren] !== CLOSE_PAREN) paren--;
  if (paren < 0) return;
  const state = buf[paren + 2];
  let pgrp = 0;
  let ticks = 0;
  let field = 4;
  let value = 0;
  for (let i = paren + 4; i < length; i++) {
    const c = buf[i];
    if (c !== SPACE && c !== NEWLINE) {
      value = value * 10 + (c - DIGIT_0); // garbage for the signed fields skipped below, never read
      continue;
    }
    if (field === 5) pgrp = value;
    else if (field >= 14) ticks += value; // utime, stime, cutime, cstime
    if (field === 17) break;
    field++;
    value = 0;
  }
  if (field !== 17 || pgrp <= 0) return; // a truncated line; or a kernel thread (group 0)
  let totals = groups.get(pgrp);
  if (totals === undefined) {
    totals = { live: [], cpuTicks: 0 };
    groups.set(pgrp, totals);
  }
  // A zombie's times are not yet its parent's; count them, but a group of zombies runs no more.
  if (state !== ZOMBIE && state !== DEAD && state !== DEAD_OLD) totals.live.push(Number(pid));
  totals.cpuTicks += ticks;
}

function systemPageSize(): number {
  pageSize ??= getconf('PAGESIZE', 4096);
  return pageSize;
}

function systemNsPerTick(): number {
  nsPerTick ??= 1e9 / getconf('CLK_TCK', 100);
  return nsPerTick;
}

/** A system constant, asked once; `fallback` (the usual Linux value) when getconf is missing or says nothing useful. */
function getconf(name: string, fallback: number): number {
  try {
    const value = Number(
      execFileSync('getconf', [name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5_000 }).trim(),
    );
    return Number.isInteger(value) && value > 0 ? value : fallback;
  } catch {
    return fallback;
  }
}
