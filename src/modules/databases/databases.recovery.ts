import type { Database } from '../../db/database.js';
import type { Clock } from '../../clock.js';
import { claimantIsDead, processInstance } from '../../instance.js';
import { dropRemoteDatabase } from './databases.engines.js';
import {
  deleteDatabaseCreation,
  findAbandonedDatabaseCreations,
  findDatabaseCreationOwners,
  findDatabaseHost,
  takeOverDatabaseCreation,
} from './databases.repository.js';
import { credentialsOf, DATABASE_CREATION_LEASE_MS } from './databases.service.js';

/**
 * Database creations a dead or stalled instance left between its record and
 * its row (docs/DATABASES.md "Failures and crashes"): each is claimed, its
 * database and user are dropped on the host (`IF EXISTS`: the crash may have
 * come before the host's CREATE), and the record is deleted. Run at every
 * start of `serve` and then every RECOVERY_INTERVAL_MS. A host that cannot be
 * reached keeps the record (claimed, with a fresh lease) for a later pass.
 */
export const DATABASE_RECOVERY_INTERVAL_MS = 15_000;

export interface DatabaseRecoveryDeps {
  db: Database;
  clock: Clock;
  appKey: Buffer;
}

interface RecoveryLog {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Returns how many abandoned creations were undone. */
export async function recoverDatabaseCreations(deps: DatabaseRecoveryDeps, log: RecoveryLog): Promise<number> {
  const self = processInstance();
  const owners = await findDatabaseCreationOwners(deps.db);
  const deadOwners = owners.filter((owner) => owner !== self.id && claimantIsDead(owner, self));
  let undone = 0;
  for (const row of await findAbandonedDatabaseCreations(deps.db, { now: deps.clock.now(), deadOwners })) {
    if (!(await takeOverDatabaseCreation(deps.db, row, self.id, deps.clock.now() + DATABASE_CREATION_LEASE_MS))) continue;
    try {
      const host = await findDatabaseHost(deps.db, row.database_host_id);
      if (host) await dropRemoteDatabase(credentialsOf(deps, host), row);
      await deleteDatabaseCreation(deps.db, row.id);
      undone += 1;
      log.info({ server: row.server_id, database: row.database }, 'dropped a database an interrupted creation left on its host');
    } catch (err) {
      log.error(
        { err, server: row.server_id, database: row.database },
        'could not undo an interrupted database creation; will retry',
      );
    }
  }
  return undone;
}

/** The periodic pass; `stop` waits for a pass under way. */
export function startDatabaseCreationRecovery(deps: DatabaseRecoveryDeps, log: RecoveryLog): { stop(): Promise<void> } {
  let pass: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    if (pass) return;
    pass = recoverDatabaseCreations(deps, log)
      .catch((err: unknown) => log.error({ err }, 'database creation recovery failed'))
      .finally(() => (pass = undefined));
  }, DATABASE_RECOVERY_INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await pass;
    },
  };
}
