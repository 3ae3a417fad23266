/** Which service instance runs a process, and whether it still lives; see "Several instances on one machine" in supervisor.ts. */
import fsSync from 'node:fs';
import { HAS_PROCFS, isGone, processExists, readProcStatSync } from './proc.js';

/** The instance that runs a process; see "Several instances on one machine". */
export interface OwnerRecord {
  pid: number;
  /** Field 22 of the owner's /proc/<pid>/stat; null without procfs. */
  startTime: string | null;
  /** /proc/sys/kernel/random/boot_id; null without procfs. */
  bootId: string | null;
}

let self: OwnerRecord | undefined;

/** This process as a pid file's owner. */
export function thisInstance(): OwnerRecord {
  self ??= { pid: process.pid, startTime: readProcStatSync(process.pid)?.startTime ?? null, bootId: readBootId() };
  return self;
}

function readBootId(): string | null {
  try {
    return fsSync.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
  } catch {
    return null;
  }
}

/**
 * Whether the instance that wrote a pid file still runs: same boot, and a
 * live process with its pid and start time. An unknown owner (a file from
 * before owners were recorded) counts as dead.
 */
export function ownerAlive(owner: OwnerRecord | null): boolean {
  if (!owner) return false;
  const me = thisInstance();
  if (owner.bootId !== null && me.bootId !== null && owner.bootId !== me.bootId) return false;
  if (owner.pid === me.pid) return owner.startTime === null || me.startTime === null || owner.startTime === me.startTime;
  const stat = readProcStatSync(owner.pid);
  if (!stat) return !HAS_PROCFS && processExists(owner.pid);
  return !isGone(stat) && (owner.startTime === null || stat.startTime === owner.startTime);
}
