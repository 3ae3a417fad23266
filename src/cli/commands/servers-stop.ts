import { findServerByReference } from '../../modules/servers/servers.repository.js';
import { daemonServer } from '../../modules/servers/servers.service.js';
import type { CliCommand } from '../command.js';
import { optionalOption, requireServer } from './lookups.js';

/**
 * `servers:stop [--server S]` (docs/reference/cli.md, docs/reference/power-and-console.md#servers-outlive-the-service): stops running servers at
 * any time, whether the service runs or not. Each is stopped as a power stop
 * from another instance would: its stop command (or SIGTERM), its grace
 * period, then SIGKILL; a running service notices the end and cleans up after
 * its own servers; what a gone instance left (a container stopped here) is
 * removed by the next service start. Prints the uuids that were running.
 */
export const command: CliCommand = {
  name: 'servers:stop',
  usage: '[--server S]',
  valueOptions: ['server'],
  async run(ctx, options) {
    const reference = optionalOption(options, 'server');
    const uuids = reference ? [(await requireServer(ctx.database.db, reference)).uuid] : ctx.daemon.runningServers();
    const stopped: string[] = [];
    for (const uuid of uuids) {
      const row = await findServerByReference(ctx.database.db, uuid);
      // A server whose row is gone (deleted while it ran) is still stopped, by signal.
      const target = row ? daemonServer(row) : { uuid, startup: null, stopCommand: null };
      if ((await ctx.daemon.state(target)) === 'offline') continue;
      await ctx.daemon.power(target, 'stop');
      stopped.push(uuid);
    }
    return { stopped };
  },
};
