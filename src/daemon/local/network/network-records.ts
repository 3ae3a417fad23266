/**
 * What runs on the machine, in files: one record per server whose network
 * exists (DATA_DIR/run/network/<uuid>.json). The firewall table is always
 * rebuilt from these, never from one instance's memory, so that several
 * instances sharing a DATA_DIR publish each other's servers too, and the
 * next start after a crash sees what the dead one left.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ServerAllocation } from '../../daemon.js';

export interface NetworkRecord {
  readonly serverUuid: string;
  /** `ip netns` name: `/run/netns/<namespace>`. */
  readonly namespace: string;
  /** Null between writing the record and claiming a subnet (a crash there leaves only the namespace). */
  readonly hostInterface: string | null;
  readonly gateway: string | null;
  readonly inside: string | null;
  readonly allocations: readonly ServerAllocation[];
}

const RECORD_SUFFIX = '.json';

export class NetworkRecords {
  constructor(readonly dir: string) {}

  file(serverUuid: string): string {
    return path.join(this.dir, `${serverUuid}${RECORD_SUFFIX}`);
  }

  /** Written by rename: a reader sees the old record or the new one, never half of one. */
  async write(record: NetworkRecord): Promise<void> {
    await fs.promises.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const temp = `${this.file(record.serverUuid)}.${process.pid}.tmp`;
    await fs.promises.writeFile(temp, JSON.stringify(record), { mode: 0o600 });
    await fs.promises.rename(temp, this.file(record.serverUuid));
  }

  readSync(serverUuid: string): NetworkRecord | null {
    try {
      return parseRecord(fs.readFileSync(this.file(serverUuid), 'utf8'));
    } catch {
      return null;
    }
  }

  async remove(serverUuid: string): Promise<void> {
    await fs.promises.rm(this.file(serverUuid), { force: true });
  }

  /** Every record, sorted by server (so the same servers give the same table). Unreadable ones are skipped: a write in flight. */
  async list(): Promise<NetworkRecord[]> {
    const names = await fs.promises.readdir(this.dir).catch(() => [] as string[]);
    const records: NetworkRecord[] = [];
    for (const name of names.sort()) {
      if (!name.endsWith(RECORD_SUFFIX)) continue;
      const record = this.readSync(name.slice(0, -RECORD_SUFFIX.length));
      if (record) records.push(record);
    }
    return records;
  }
}

function parseRecord(text: string): NetworkRecord | null {
  const value = JSON.parse(text) as Partial<NetworkRecord>;
  if (typeof value.serverUuid !== 'string' || typeof value.namespace !== 'string' || !Array.isArray(value.allocations))
    return null;
  return {
    serverUuid: value.serverUuid,
    namespace: value.namespace,
    hostInterface: typeof value.hostInterface === 'string' ? value.hostInterface : null,
    gateway: typeof value.gateway === 'string' ? value.gateway : null,
    inside: typeof value.inside === 'string' ? value.inside : null,
    allocations: value.allocations.filter(
      (a): a is ServerAllocation => typeof a === 'object' && a !== null && typeof a.ip === 'string' && Number.isInteger(a.port),
    ),
  };
}
