import { loadAppKey } from '../../app-key.js';
import { CliError, requireOption, type CliCommand } from '../command.js';
import { hasServerFiles } from '../../daemon/local/volume/remove-server.js';
import { findServerByReference } from '../../modules/servers/servers.repository.js';
import { deleteServer, ServerDeletionRefused } from '../../modules/settings/server-deletion.js';

const FULL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `server:delete --server S [--force]` (docs/reference/cli.md, docs/reference/eggs-and-installs.md): the server, its
 * rows and its files (modules/settings/server-deletion.ts says what goes and
 * in which order). Refused while it runs unless --force. Given the full UUID
 * of a server whose row is already gone (a deletion a crash cut short), it
 * removes what the node still keeps of it.
 */
export const command: CliCommand = {
  name: 'server:delete',
  usage: '--server S [--force]',
  valueOptions: ['server'],
  flagOptions: ['force'],
  async run(ctx, options) {
    const reference = requireOption(options, 'server');
    const appKey = loadAppKey(ctx.config.dataDir, { APP_KEY: ctx.config.appKey });
    const deps = { db: ctx.database.db, daemon: ctx.daemon, clock: ctx.clock, appKey };
    const server = await findServerByReference(ctx.database.db, reference);
    if (!server) {
      const uuid = reference.toLowerCase();
      if (FULL_UUID.test(uuid) && (await hasServerFiles(ctx.daemon.paths, uuid))) {
        await ctx.daemon.removeServer({ uuid, startup: null, stopCommand: null });
        return { deleted: true };
      }
      throw new CliError(`No server matches "${reference}".`);
    }
    try {
      await deleteServer(deps, server, { force: options.force === true });
    } catch (err) {
      if (err instanceof ServerDeletionRefused) throw new CliError(err.message);
      throw err;
    }
    return { deleted: true };
  },
};
