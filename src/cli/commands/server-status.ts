import { CliError, requireOption, type CliCommand } from '../command.js';
import type { ServerStatus } from '../../db/schema.js';
import { forceClearRestore } from '../../modules/backups/backups.recovery.js';
import { setServerStatusUnlessRestoring } from '../../modules/servers/servers.repository.js';
import { requireServer } from './lookups.js';

/** What an operator may set; `restoring_backup` belongs to the restore that sets and clears it. */
const SETTABLE: Readonly<Record<string, ServerStatus | null>> = {
  none: null,
  installing: 'installing',
  install_failed: 'install_failed',
  suspended: 'suspended',
};

/**
 * `server:status --server S --set none|installing|install_failed|suspended [--force]`
 * (docs/reference/cli.md). A restore in progress is refused; `--set none --force` clears
 * one that is stuck (its recovery failed): its row goes, its files on this node
 * are settled (the volume left as the old or the restored tree) and removed.
 */
export const command: CliCommand = {
  name: 'server:status',
  usage: '--server S --set none|installing|install_failed|suspended [--force]',
  valueOptions: ['server', 'set'],
  flagOptions: ['force'],
  async run(ctx, options) {
    const reference = requireOption(options, 'server');
    const wanted = requireOption(options, 'set');
    if (!Object.hasOwn(SETTABLE, wanted)) {
      throw new CliError(`--set must be one of ${Object.keys(SETTABLE).join(', ')}, got "${wanted}"`);
    }
    const status = SETTABLE[wanted]!;
    const server = await requireServer(ctx.database.db, reference);
    if (await setServerStatusUnlessRestoring(ctx.database.db, server.id, status, ctx.clock.now())) {
      return { uuid: server.uuid, status };
    }
    if (options.force !== true || status !== null) {
      throw new CliError(
        'The server is restoring a backup; set its status once the restore has finished (or, if it is stuck, --set none --force).',
      );
    }
    await forceClearRestore({ db: ctx.database.db, clock: ctx.clock, daemon: ctx.daemon }, server);
    return { uuid: server.uuid, status };
  },
};
