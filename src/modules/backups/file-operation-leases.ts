import type { Clock } from '../../clock.js';
import type { Database } from '../../db/database.js';
import { processInstance } from '../../instance.js';
import { renewLeases } from './file-operations.repository.js';

/**
 * The leases of the restores and backups this process is working on
 * (docs/RESTORE.md "Crash safety"). Each is stamped with this process's
 * instance id and a lease that is renewed while the work goes on. Another
 * instance on this machine sees at once that a dead owner's process is gone;
 * one elsewhere waits for the lease to run out. Recovery passes over what this
 * process holds.
 */
export const FILE_OPERATION_LEASE_MS = 30_000;
const RENEW_EVERY_MS = 10_000;

export class FileOperationLeases {
  readonly owner = processInstance().id;
  private readonly restores = new Set<string>();
  private readonly backups = new Set<number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  leaseUntil(): number {
    return this.clock.now() + FILE_OPERATION_LEASE_MS;
  }

  holdsRestore(id: string): boolean {
    return this.restores.has(id);
  }

  holdsBackup(id: number): boolean {
    return this.backups.has(id);
  }

  /** Keeps renewing the restore's lease until the returned function is called. */
  holdRestore(id: string): () => void {
    this.restores.add(id);
    this.update();
    return () => {
      this.restores.delete(id);
      this.update();
    };
  }

  holdBackup(id: number): () => void {
    this.backups.add(id);
    this.update();
    return () => {
      this.backups.delete(id);
      this.update();
    };
  }

  private update(): void {
    const busy = this.restores.size > 0 || this.backups.size > 0;
    if (busy && this.timer === undefined) {
      this.timer = setInterval(() => void this.renew(), RENEW_EVERY_MS);
      // Never what keeps a process alive.
      this.timer.unref();
    } else if (!busy && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private async renew(): Promise<void> {
    try {
      await renewLeases(this.db, { restores: [...this.restores], backups: [...this.backups] }, this.owner, this.leaseUntil());
    } catch {
      // The next renewal tries again; a lease missed entirely only lets another instance take over sooner.
    }
  }
}

const perDatabase = new WeakMap<Database, FileOperationLeases>();

/** One set of leases per database handle in this process. */
export function fileOperationLeases(deps: { db: Database; clock: Clock }): FileOperationLeases {
  let leases = perDatabase.get(deps.db);
  if (!leases) {
    leases = new FileOperationLeases(deps.db, deps.clock);
    perDatabase.set(deps.db, leases);
  }
  return leases;
}
