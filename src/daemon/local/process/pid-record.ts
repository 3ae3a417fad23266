/** What a pid file holds, and what it says about the server it names. */
import { ownerAlive, type OwnerRecord } from './owner.js';
import { isSignallableId, recordedGroupAliveSync } from './process-group.js';

/** What containerId() makes: a pid file naming anything else is not ours. */
const CONTAINER_ID = /^quetzal-[A-Za-z0-9][\w.+-]{0,100}$/;

/** The contents of `<runDir>/<uuid>.pid`. */
export interface PidRecord {
  /** Null in a claim: the file is created before the process is spawned, so that two instances never both spawn it. */
  pid: number | null;
  pgid: number | null;
  /** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot): tells our process from a recycled pid. Null without procfs. */
  startTime: string | null;
  command: string;
  startedAt: string;
  /** Null in files written before owners were recorded: such an owner counts as dead. */
  owner: OwnerRecord | null;
  /** Random, per start: two claims never have the same contents. */
  token: string;
  /** The runc container the process is the first process of (docs/reference/containment.md); null for a plain process group. */
  container: string | null;
}

/** A pid file that names a process (not a mere claim). */
export type SpawnedRecord = PidRecord & { pid: number; pgid: number };

/** A pid file as read: its exact text (for `removeIfUnchanged`) and what it says. */
export interface PidFileContents {
  raw: string;
  record: PidRecord;
  state: 'starting' | 'running' | 'offline';
}

export function serializePidRecord(record: PidRecord): string {
  return `${JSON.stringify(record)}\n`;
}

/** What a pid file's text says, or null when it is not a pid file at all. */
export function examinePidFile(raw: string): PidFileContents | null {
  let record: PidRecord | null;
  try {
    record = parsePidRecord(JSON.parse(raw) as unknown);
  } catch {
    return null;
  }
  return record && { raw, record, state: recordedState(record) };
}

/** `starting` for a claim of a live owner, `running` while the recorded group lives, else `offline`. */
function recordedState(record: PidRecord): PidFileContents['state'] {
  if (!isSpawned(record)) return ownerAlive(record.owner) ? 'starting' : 'offline';
  return recordedGroupAliveSync(record) ? 'running' : 'offline';
}

export function isSpawned(record: PidRecord): record is SpawnedRecord {
  return record.pid !== null && record.pgid !== null;
}

function parsePidRecord(value: unknown): PidRecord | null {
  if (typeof value !== 'object' || value === null) return null;
  const { pid, pgid, startTime, command, startedAt, owner, token, container } = value as Record<string, unknown>;
  if (container !== undefined && container !== null && (typeof container !== 'string' || !CONTAINER_ID.test(container)))
    return null;
  const parsedOwner = parseOwner(owner);
  if (owner !== undefined && owner !== null && !parsedOwner) return null;
  const claimed = pid === null && pgid === null && parsedOwner !== null;
  if (!claimed && (!isSignallableId(pid) || !isSignallableId(pgid))) return null;
  if (startTime !== null && typeof startTime !== 'string') return null;
  return {
    pid: claimed ? null : (pid as number),
    pgid: claimed ? null : (pgid as number),
    startTime,
    command: typeof command === 'string' ? command : '',
    startedAt: typeof startedAt === 'string' ? startedAt : '',
    owner: parsedOwner,
    token: typeof token === 'string' ? token : '',
    container: typeof container === 'string' ? container : null,
  };
}

function parseOwner(value: unknown): OwnerRecord | null {
  if (typeof value !== 'object' || value === null) return null;
  const { pid, startTime, bootId } = value as Record<string, unknown>;
  if (!isSignallableId(pid)) return null;
  if (startTime !== null && typeof startTime !== 'string') return null;
  if (bootId !== null && typeof bootId !== 'string') return null;
  return { pid, startTime, bootId };
}
