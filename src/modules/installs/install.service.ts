/**
 * Installing a server (docs/reference/eggs-and-installs.md): the egg's install script in an installer
 * box on the daemon, status `installing` until it ends, then null (exit 0) or
 * `install_failed`; live consoles get `install started`, each `install
 * output` line and `install completed` (ServerEvents).
 *
 * The claim (status → `installing`, with the activity entry when a user asked
 * for it) is one conditional update in one transaction: of two reinstalls at
 * once exactly one wins. A SIGKILL after the claim leaves the server
 * `installing` with no install running here: the next start's recovery
 * (install.recovery.ts) ends what the daemon left and marks it `install_failed`.
 */
import type { Daemon, DaemonServer } from '../../daemon/daemon.js';
import type { AppDeps } from '../../deps.js';
import type { ServerRow, ServerStatus } from '../../db/schema.js';
import { conflict, notFound } from '../../http/errors.js';
import { recordActivity, type Actor } from '../activity/activity.recorder.js';
import { findServerById } from '../servers/servers.repository.js';
import { daemonServerForPower } from '../servers/servers.service.js';
import { installScriptFor } from './install.environment.js';
import { claimServerForInstall, finishInstallStatus } from './installs.repository.js';

export type InstallDeps = Pick<AppDeps, 'db' | 'daemon' | 'clock' | 'serverEvents'> & { logger?: InstallLogger };

export interface InstallLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface InstallRequest {
  /** A reinstall (POST /settings/reinstall, `server:reinstall`): the server is stopped first. */
  readonly reinstall: boolean;
  /** Who asked, for the activity entry (`server:reinstall` for a reinstall); absent = none logged. */
  readonly actor?: Actor;
  /** The statuses an install may begin from; default null and `install_failed` (an admin's retry). */
  readonly from?: readonly (ServerStatus | null)[];
}

const NOT_INSTALLABLE = 'This server is not in a state that allows it to be reinstalled.';

/**
 * Runs the install of server `serverId` (its egg's script) and resolves once it
 * ended, with the server's status then (null, or `install_failed`). A server
 * without an egg, or whose egg has no script, is simply marked installed.
 * A status it cannot begin from (another install, a restore, a suspension) is a 409.
 */
export async function installServer(
  deps: InstallDeps,
  serverId: number,
  request: InstallRequest,
): Promise<{ status: ServerStatus | null }> {
  const server = await claimInstall(deps, serverId, request);
  return runClaimedInstall(deps, server, request);
}

/** Status → `installing` (and the activity entry) in one transaction; the server as it is then. */
export async function claimInstall(deps: InstallDeps, serverId: number, request: InstallRequest): Promise<ServerRow> {
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
    if (!(await claimServerForInstall(trx, serverId, request.from ?? [null, 'install_failed'], now))) {
      if (!(await findServerById(trx, serverId))) throw notFound();
      throw conflict(NOT_INSTALLABLE);
    }
    if (request.actor)
      await recordActivity(trx, {
        serverId,
        event: 'server:reinstall',
        actor: request.actor,
        timestamp: now,
      });
    return (await findServerById(trx, serverId))!;
  });
}

/** Runs an install whose claim committed; the status leaves `installing` whatever happens (short of a SIGKILL). */
export async function runClaimedInstall(
  deps: InstallDeps,
  server: ServerRow,
  request: Pick<InstallRequest, 'reinstall'>,
): Promise<{ status: ServerStatus | null }> {
  const emit = deps.serverEvents ? deps.serverEvents.emit.bind(deps.serverEvents) : () => undefined;
  const serverUuid = server.uuid;
  let status: ServerStatus | null = 'install_failed';
  let started = false;
  try {
    const target = await daemonServerForPower(deps.db, server);
    const script = await installScriptFor(deps.db, deps.daemon, server, target);
    if (script === null) {
      status = null;
    } else {
      if (request.reinstall) await stopServer(deps.daemon, target);
      emit({ type: 'install-started', serverUuid });
      started = true;
      const outcome = await deps.daemon.install(target, script, (line) => emit({ type: 'install-output', serverUuid, line }));
      status = outcome.exitCode === 0 && outcome.error === undefined ? null : 'install_failed';
      const reason = outcome.error ?? `exit code ${outcome.exitCode}`;
      if (status === null) deps.logger?.info({ serverUuid }, 'server installed');
      else deps.logger?.warn({ serverUuid, reason, image: script.image }, 'server install failed');
    }
  } catch (err) {
    deps.logger?.warn({ serverUuid, err }, 'server install failed before its script ended');
    status = 'install_failed';
  } finally {
    // Even when the database fails here, the sockets hear the end; recovery at the next start settles the row.
    await finishInstallStatus(deps.db, server.id, status, deps.clock.now()).finally(() => {
      if (started) emit({ type: 'install-completed', serverUuid, successful: status === null });
    });
  }
  return { status };
}

/** Stops a running server as a user's stop does (its stop command, then SIGKILL after the grace period). */
async function stopServer(daemon: Daemon, target: DaemonServer): Promise<void> {
  if ((await daemon.state(target)) === 'offline') return;
  await daemon.power(target, 'stop');
  if ((await daemon.state(target)) !== 'offline') await daemon.power(target, 'kill');
}
