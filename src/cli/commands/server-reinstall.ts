import type { ServerStatus } from '../../db/schema.js';
import { HttpError } from '../../http/errors.js';
import { SYSTEM_ACTOR } from '../../modules/activity/activity.recorder.js';
import { installServer } from '../../modules/installs/install.service.js';
import { daemonServer } from '../../modules/servers/servers.service.js';
import { CliError, requireOption, type CliCommand } from '../command.js';
import { openInstallDaemon } from './install-daemon.js';
import { requireServer } from './lookups.js';

/**
 * `server:reinstall --server S` (docs/reference/cli.md, docs/reference/eggs-and-installs.md): stops the server,
 * runs its egg's install script again on its volume, waits for the end and
 * prints `{"uuid", "status"}` (status null, or `install_failed`; the reason is
 * the install log's last line, `logs/<uuid>.install.log`). Allowed from a
 * ready server, a failed install, and an install no instance runs any more;
 * refused while one runs, while a backup is restored, and for a suspended
 * server. The install runs confined as the service's servers do: this
 * command decides containment from the same settings (CONTAINMENT...). Logged
 * as `server:reinstall` by the system. A service that runs meanwhile sees the
 * status but not the output (its consoles hear only its own installs).
 */
export const command: CliCommand = {
  name: 'server:reinstall',
  usage: '--server S',
  valueOptions: ['server'],
  async run(ctx, options) {
    const row = await requireServer(ctx.database.db, requireOption(options, 'server'));
    const { config } = ctx;
    // Not daemon.start(): that would take over processes that a running service owns.
    const daemon = await openInstallDaemon(config);
    try {
      const from: (ServerStatus | null)[] = [null, 'install_failed'];
      // One that no instance runs any more (its service died) is retried; the daemon ends what it left.
      if (row.status === 'installing' && !(await daemon.installRunning(daemonServer(row)))) from.push('installing');
      const { status } = await installServer({ db: ctx.database.db, daemon, clock: ctx.clock }, row.id, {
        reinstall: true,
        actor: SYSTEM_ACTOR,
        from,
      });
      return { uuid: row.uuid, status };
    } catch (err) {
      if (err instanceof HttpError) throw new CliError(`Cannot reinstall this server now (status ${row.status ?? 'none'}).`);
      throw err;
    } finally {
      await daemon.close();
    }
  },
};
