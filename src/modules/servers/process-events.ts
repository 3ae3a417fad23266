/**
 * What the daemon tells of a server's process on its own, written to the
 * server's activity log by the system (no user did it): an out-of-memory
 * kill (docs/reference/containment.md) as `server:process.oom`, a stop for passing the disk or
 * inode limit as `server:process.disk-limit`.
 */
import type { AppDeps } from '../../deps.js';
import { recordActivity, SYSTEM_ACTOR } from '../activity/activity.recorder.js';
import { findServerByReference } from './servers.repository.js';

interface Logger {
  error(obj: object, msg: string): void;
}

/** Subscribes; returns the unsubscribe. */
export function recordProcessEvents(deps: Pick<AppDeps, 'db' | 'clock' | 'daemon'>, logger: Logger): () => void {
  const record = (event: string) => (serverUuid: string) => {
    void recordSystemEvent(deps, serverUuid, event).catch((err: unknown) =>
      logger.error({ err, serverUuid }, `could not log ${event}`),
    );
  };
  const unsubscribes = [
    deps.daemon.onOutOfMemory(record('server:process.oom')),
    deps.daemon.onDiskLimit(record('server:process.disk-limit')),
  ];
  return () => {
    for (const unsubscribe of unsubscribes) unsubscribe();
  };
}

async function recordSystemEvent(deps: Pick<AppDeps, 'db' | 'clock'>, serverUuid: string, event: string): Promise<void> {
  const server = await findServerByReference(deps.db, serverUuid);
  if (!server) return; // deleted meanwhile
  await recordActivity(deps.db, { serverId: server.id, event, actor: SYSTEM_ACTOR, timestamp: deps.clock.now() });
}
