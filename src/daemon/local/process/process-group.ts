/**
 * A server's process group: signalling it, and telling whether any of its
 * processes still runs. Each server runs as the leader of its own group, so a
 * signal to the group reaches everything its startup command forked.
 */
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import { errnoCode } from './helpers.js';
import { HAS_PROCFS, isGone, processExists, readProcStat, readProcStatSync } from './proc.js';
import { waitUntil } from './waiting.js';

/** How long to wait for a SIGKILLed orphan group to vanish before giving up on it. */
export const REAP_KILL_WAIT_MS = 2_000;

/** Group ids 0 and 1 must never be signalled: kill(-0) is our own group, kill(-1) is every process we may signal. */
export function isSignallableId(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 1;
}

/** Signals every process in the group; a group that no longer exists is not an error. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  if (!isSignallableId(pgid)) throw new Error(`refusing to signal process group ${pgid}`);
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if (errnoCode(err) !== 'ESRCH') throw err;
  }
}

export function groupExists(pgid: number): boolean {
  if (!isSignallableId(pgid)) return false;
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    // EPERM: the group exists but is not ours to signal.
    return errnoCode(err) === 'EPERM';
  }
}

/**
 * Whether any process of the group still runs. Zombies do not count: once our
 * shell is gone, its children are reparented to PID 1, and a container's PID 1
 * often never reaps them, yet kill(-pgid, 0) keeps finding them. Without
 * procfs, kill(-pgid, 0) is all there is.
 */
export async function groupAlive(pgid: number): Promise<boolean> {
  if (!groupExists(pgid)) return false;
  let entries: string[];
  try {
    entries = await fs.readdir('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readProcStat(Number(entry));
    if (stat && stat.pgrp === pgid && !isGone(stat)) return true;
  }
  return false;
}

/** `groupAlive` for `state()`, which is synchronous. */
export function groupAliveSync(pgid: number): boolean {
  if (!groupExists(pgid)) return false;
  let entries: string[];
  try {
    entries = fsSync.readdirSync('/proc');
  } catch {
    return true;
  }
  return entries.some((entry) => {
    if (!/^\d+$/.test(entry)) return false;
    const stat = readProcStatSync(Number(entry));
    return stat !== null && stat.pgrp === pgid && !isGone(stat);
  });
}

/** The process group a pid file records: its leader's pid, that leader's start time, and the group id. */
export interface RecordedGroup {
  readonly pid: number;
  readonly pgid: number;
  readonly startTime: string | null;
  /**
   * The runc container the leader is the first process of (docs/reference/containment.md), or null
   * for a plain process group. Absent in pid files from before containment.
   */
  readonly container?: string | null;
}

/**
 * Signals every process of the server a pid file records: its process group,
 * or, for a container, every process in the container's PID namespace (a
 * process there may have left the group with setsid). SIGKILL to a
 * container's first process is enough: the kernel ends its whole PID
 * namespace with it. A leader that is gone or recycled is left alone (its
 * namespace is gone with it).
 */
export function signalRecorded(record: RecordedGroup, signal: NodeJS.Signals): void {
  if (!record.container) {
    // The leader's pid taken by a later process: the group is gone too (a pid still in use as a group id is
    // never handed out), and a group by that id now is someone else's (pid_max is 32768 on many hosts).
    if (record.startTime !== null && leaderStatus(record) === 'recycled') return;
    return signalGroup(record.pgid, signal);
  }
  if (!isSignallableId(record.pid)) throw new Error(`refusing to signal process ${record.pid}`);
  if (leaderStatus(record) !== 'alive') return;
  if (signal === 'SIGKILL') return signalProcess(record.pid, signal);
  signalNamespace(record.pid, signal);
}

/** Every process that shares `leader`'s PID namespace, the leader too (a namespace's first process ignores what it has no handler for). */
function signalNamespace(leader: number, signal: NodeJS.Signals): void {
  let namespace: string;
  try {
    namespace = fsSync.readlinkSync(`/proc/${leader}/ns/pid`);
  } catch {
    return; // gone meanwhile
  }
  // A container's first process is in a namespace of its own. One in ours is not it (a recycled pid, a
  // pid file gone wrong): signalling "its namespace" would signal every process of the host.
  if (namespace === OWN_PID_NAMESPACE)
    throw new Error(`refusing to signal process ${leader}: it is not in a container's PID namespace`);
  for (const entry of fsSync.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let other: string;
    try {
      other = fsSync.readlinkSync(`/proc/${entry}/ns/pid`);
    } catch {
      continue;
    }
    if (other === namespace) signalProcess(Number(entry), signal);
  }
}

const OWN_PID_NAMESPACE = readOwnPidNamespace();

function readOwnPidNamespace(): string | null {
  try {
    return fsSync.readlinkSync('/proc/self/ns/pid');
  } catch {
    return null;
  }
}

function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch (err) {
    if (errnoCode(err) !== 'ESRCH') throw err;
  }
}

/**
 * The state of the leader a pid file names. A live pid with another start
 * time is a recycled pid — and then the group cannot be the recorded one
 * either, because Linux does not hand out a pid that is still some group's id.
 */
export function leaderStatus(record: RecordedGroup): 'alive' | 'recycled' | 'gone' {
  const stat = readProcStatSync(record.pid);
  if (!stat) return !HAS_PROCFS && processExists(record.pid) ? 'alive' : 'gone';
  if (isGone(stat)) return 'gone';
  if (record.startTime !== null && stat.startTime !== record.startTime) return 'recycled';
  return 'alive';
}

/**
 * Whether the process group a pid file names still runs. A leader that is
 * gone while its group lives means the group holds what the server forked.
 */
export function recordedGroupAliveSync(record: RecordedGroup): boolean {
  const leader = leaderStatus(record);
  return leader === 'gone' ? groupAliveSync(record.pgid) : leader === 'alive';
}

export async function recordedGroupAlive(record: RecordedGroup): Promise<boolean> {
  const leader = leaderStatus(record);
  return leader === 'gone' ? groupAlive(record.pgid) : leader === 'alive';
}

/**
 * Asks a recorded process group to stop (`ask`), gives it up to `graceMs` to
 * go, then SIGKILLs it; throws if it is still there after that.
 */
export async function endGroup(
  record: RecordedGroup,
  graceMs: number,
  ask: () => void | Promise<void>,
): Promise<'stopped' | 'killed'> {
  const ended = async () => !(await recordedGroupAlive(record));
  await ask();
  if (await waitUntil(ended, graceMs)) return 'stopped';
  signalRecorded(record, 'SIGKILL');
  if (!(await waitUntil(ended, REAP_KILL_WAIT_MS))) {
    throw new Error(`process group ${record.pgid} is still there after SIGKILL`);
  }
  return 'killed';
}
