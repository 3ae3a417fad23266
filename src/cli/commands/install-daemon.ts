import path from 'node:path';
import type { Config } from '../../config.js';
import { resolveContainment, ContainmentUnavailableError } from '../../daemon/local/container/container-runtime.js';
import { LocalDaemon, localDaemonPaths } from '../../daemon/local/local-daemon.js';
import { CliError } from '../command.js';

/** What resolveContainment needs, from the service's configuration: every command that runs servers decides alike. */
export function containmentOptions(config: Config): Parameters<typeof resolveContainment>[0] {
  return {
    mode: config.containment,
    uid: config.serverUid,
    uidRange: config.serverUidRange,
    dataDir: config.dataDir,
    runDir: localDaemonPaths(config.dataDir).run,
    hiddenPaths: [path.join(process.cwd(), '.env')],
    serverNetwork: config.serverNetwork,
  };
}

/**
 * A daemon for an admin command that runs an install (`server:create --egg`,
 * `server:reinstall`): confined as the service's servers are (the same
 * CONTAINMENT settings), not started (daemon.start() would take over
 * processes a running service owns). The caller closes it.
 */
export async function openInstallDaemon(config: Config): Promise<LocalDaemon> {
  const containers = await resolveContainment(containmentOptions(config), { warn: () => undefined }).catch((err: unknown) => {
    if (err instanceof ContainmentUnavailableError) throw new CliError(err.message);
    throw err;
  });
  return new LocalDaemon(config.dataDir, { containers, serversOnShutdown: 'keep' });
}
