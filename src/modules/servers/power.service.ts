import type { AppDeps } from '../../deps.js';
import type { ServerRow } from '../../db/schema.js';
import { DaemonError } from '../../daemon/daemon.js';
import { forbidden, ValidationError } from '../../http/errors.js';
import { can, permissionForSignal, type Access, type PowerSignal } from '../../http/permissions.js';
import { recordActivity, type Actor } from '../activity/activity.recorder.js';
import { COMMAND_MAX_BYTES } from '../tasks/tasks.rules.js';
import { daemonServer, daemonServerForPower } from './servers.service.js';

type Deps = Pick<AppDeps, 'db' | 'clock' | 'daemon' | 'jobs'>;

/**
 * Sends a power signal (docs/reference/servers.md#the-server-routes). Start answers once the process is spawned;
 * stop, restart and kill can take the stop grace period, so they continue in
 * the background after the request is answered, as Wings does.
 */
export async function sendPowerSignal(deps: Deps, server: ServerRow, access: Access, actor: Actor, signal: PowerSignal) {
  if (!can(access, permissionForSignal(signal))) throw forbidden();
  const target = await daemonServerForPower(deps.db, server);
  if ((signal === 'start' || signal === 'restart') && !server.startup) {
    throw new DaemonError('This server has no startup command.');
  }
  if (signal === 'start') {
    await deps.daemon.power(target, signal);
  } else {
    // A restart continues in the background: its disk-limit refusal (docs/reference/containment.md) is told now, as a start's is.
    if (signal === 'restart') await deps.daemon.assertStartable(target);
    deps.jobs.run(`power ${signal} ${server.uuid}`, () => deps.daemon.power(target, signal));
  }
  await recordActivity(deps.db, { serverId: server.id, event: `server:power.${signal}`, actor, timestamp: deps.clock.now() });
}

/** Writes a console line to the running server (docs/reference/servers.md#the-server-routes); 502 when it is not running. */
export async function sendConsoleCommand(deps: Deps, server: ServerRow, actor: Actor, command: string) {
  if (/[\r\n]/.test(command)) throw ValidationError.of('command', 'regex', 'The command field must be a single line.');
  if (Buffer.byteLength(command, 'utf8') > COMMAND_MAX_BYTES) {
    throw ValidationError.of('command', 'max', `The command field must not be greater than ${COMMAND_MAX_BYTES} bytes.`);
  }
  await deps.daemon.sendCommand(daemonServer(server), command);
  await recordActivity(deps.db, {
    serverId: server.id,
    event: 'server:console.command',
    actor,
    properties: { command },
    timestamp: deps.clock.now(),
  });
}
