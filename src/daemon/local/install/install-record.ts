/**
 * Which instance of the service runs a server's install on this node:
 * `<run>/installs/<uuid>.owner`, JSON of the owner (process/owner.ts) and of
 * how the install runs (`box`: the runc container's id; `process`: the
 * unconfined child's pid and start time). Written before the install starts,
 * removed after it ended and its box is gone.
 *
 * A SIGKILL of the owner leaves the record naming a dead owner: the install
 * is then "not running here" (`installOwnedElsewhere` false), and whatever it
 * left (a box still running, a child still running) is ended by `abort`.
 */
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ownerAlive, thisInstance, type OwnerRecord } from '../process/owner.js';

export interface InstallRecord {
  readonly owner: OwnerRecord;
  readonly box?: string;
  readonly process?: { readonly pid: number; readonly startTime: string | null };
}

export function installRecordPath(runDir: string, serverUuid: string): string {
  return path.join(runDir, 'installs', `${serverUuid}.owner`);
}

export async function writeInstallRecord(file: string, record: Omit<InstallRecord, 'owner'>): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  await fs.writeFile(temporary, JSON.stringify({ owner: thisInstance(), ...record }), { mode: 0o600 });
  await fs.rename(temporary, file);
}

export async function readInstallRecord(file: string): Promise<InstallRecord | null> {
  try {
    const parsed = JSON.parse(await fs.readFile(file, 'utf8')) as InstallRecord;
    return typeof parsed.owner?.pid === 'number' ? parsed : null;
  } catch {
    return null;
  }
}

export function readInstallRecordSync(file: string): InstallRecord | null {
  try {
    const parsed = JSON.parse(fsSync.readFileSync(file, 'utf8')) as InstallRecord;
    return typeof parsed.owner?.pid === 'number' ? parsed : null;
  } catch {
    return null;
  }
}

export async function removeInstallRecord(file: string): Promise<void> {
  await fs.rm(file, { force: true });
}

/** Whether a live instance other than this one runs the install the record names. */
export function ownedElsewhere(record: InstallRecord | null): boolean {
  return record !== null && record.owner.pid !== process.pid && ownerAlive(record.owner);
}
