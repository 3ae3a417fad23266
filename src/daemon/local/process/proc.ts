/** What /proc says about a process: the supervisor's only way to tell a live process from a zombie or a recycled pid. */
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import { errnoCode } from './helpers.js';

export const HAS_PROCFS = fsSync.existsSync('/proc/self/stat');

/** Field 22 of /proc/<pid>/stat, or null (no such process, or no procfs). */
export async function readStartTime(pid: number): Promise<string | null> {
  return (await readProcStat(pid))?.startTime ?? null;
}

export interface ProcStat {
  /** Field 3: R, S, D, Z (zombie), X (dead), ... */
  state: string;
  /** Field 5: the process group id. */
  pgrp: number;
  /** Field 22: start time in clock ticks after boot. */
  startTime: string;
}

/** The fields of /proc/<pid>/stat the supervisor uses, or null (no such process, or no procfs). */
export async function readProcStat(pid: number): Promise<ProcStat | null> {
  try {
    return parseProcStat(await fs.readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

export function readProcStatSync(pid: number): ProcStat | null {
  try {
    return parseProcStat(fsSync.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

function parseProcStat(stat: string): ProcStat | null {
  // Field 2 (the command name) is in parentheses and may itself hold spaces or ')'; fields[0] is field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const [state, pgrp, startTime] = [fields[0], fields[5 - 3], fields[22 - 3]];
  if (state === undefined || pgrp === undefined || startTime === undefined) return null;
  return { state, pgrp: Number(pgrp), startTime };
}

/** A zombie or dead process: it runs no more, whatever kill(pid, 0) says. */
export function isGone(stat: ProcStat): boolean {
  return stat.state === 'Z' || stat.state === 'X';
}

export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoCode(err) === 'EPERM';
  }
}
