/**
 * What the daemon tells of a server's process on its own, written to the
 * server's activity log: an out-of-memory kill (SPEC 10) as
 * `server:process.oom`, by the system (no user did it).
 */
import type { AppDeps } from '../../deps.js';
import { recordActivity, SYSTEM_ACTOR } from '../activity/activity.recorder.js';
import { findServerByReference } from './servers.repository.js';

interface Logger {
  error(obj: object, msg: string): void;
}

/** Subscribes; returns the unsubscribe. */
export function recordProcessEvents(deps: Pick<AppDeps, 'db' | 'clock' | 'daemon'>, logger: Logger): () => void {
  return deps.daemon.onOutOfMemory((serverUuid) => {
    void recordOutOfMemory(deps, serverUuid).catch((err: unknown) =>
      logger.error({ err, serverUuid }, 'could not log server:process.oom'),
    );
  });
}

async function recordOutOfMemory(deps: Pick<AppDeps, 'db' | 'clock'>, serverUuid: string): Promise<void> {
  const server = await findServerByReference(deps.db, serverUuid);
  if (!server) return; // deleted meanwhile
  await recordActivity(deps.db, { serverId: server.id, event: 'server:process.oom', actor: SYSTEM_ACTOR, timestamp: deps.clock.now() });
}
