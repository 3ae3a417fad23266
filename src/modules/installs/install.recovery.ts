/**
 * At service start (docs/reference/eggs-and-installs.md): a server left `installing` whose install no
 * instance runs on this node any more (the service was SIGKILLed, or the
 * machine stopped, mid-install) is settled: what the install left on the node
 * (its box, still running perhaps, or its child process) is ended by the
 * daemon's abortInstall, which also ends the install log with why, and the
 * status becomes `install_failed`. It is not re-run: a script cut short may
 * have left the volume half-written, and a script that crashes the machine
 * would run again at every start; the owner sees the failure and an admin
 * runs `server:reinstall` (docs/INSTALLS.md).
 *
 * An install another live instance runs (a `server:reinstall` command beside
 * the service) is left alone. Run again after a SIGKILL during recovery, it
 * does the same: each step is safe to repeat.
 */
import type { AppDeps } from '../../deps.js';
import { daemonServer } from '../servers/servers.service.js';
import { findInstallingServers, finishInstallStatus } from './installs.repository.js';

export const CUT_SHORT_REASON = 'the service stopped during the install';

export interface RecoveryLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** The servers it marked `install_failed`, by uuid. */
export async function recoverInstalls(deps: Pick<AppDeps, 'db' | 'daemon' | 'clock'>, log: RecoveryLogger): Promise<string[]> {
  const failed: string[] = [];
  for (const server of await findInstallingServers(deps.db)) {
    const target = daemonServer(server);
    try {
      if (await deps.daemon.installRunning(target)) continue;
      await deps.daemon.abortInstall(target, CUT_SHORT_REASON);
      if (await finishInstallStatus(deps.db, server.id, 'install_failed', deps.clock.now())) {
        failed.push(server.uuid);
        log.warn({ serverUuid: server.uuid, reason: CUT_SHORT_REASON }, 'server install failed');
      }
    } catch (err) {
      log.error({ err, serverUuid: server.uuid }, 'could not settle an install a stopped service left');
    }
  }
  return failed;
}
