import { CliError, requireOption, type CliCommand } from '../command.js';
import type { ServerStatus } from '../../db/schema.js';
import { setServerStatusUnlessRestoring } from '../../modules/servers/servers.repository.js';
import { requireServer } from './lookups.js';

/** What an operator may set; `restoring_backup` belongs to the restore that sets and clears it. */
const SETTABLE: Readonly<Record<string, ServerStatus | null>> = {
  none: null,
  installing: 'installing',
  install_failed: 'install_failed',
  suspended: 'suspended',
};

/** `server:status --server S --set none|installing|install_failed|suspended` (CONTRACT.md). */
export const command: CliCommand = {
  name: 'server:status',
  usage: '--server S --set none|installing|install_failed|suspended',
  valueOptions: ['server', 'set'],
  async run(ctx, options) {
    const reference = requireOption(options, 'server');
    const wanted = requireOption(options, 'set');
    if (!Object.hasOwn(SETTABLE, wanted)) {
      throw new CliError(`--set must be one of ${Object.keys(SETTABLE).join(', ')}, got "${wanted}"`);
    }
    const status = SETTABLE[wanted]!;
    const server = await requireServer(ctx.database.db, reference);
    if (!(await setServerStatusUnlessRestoring(ctx.database.db, server.id, status, ctx.clock.now()))) {
      throw new CliError('The server is restoring a backup; set its status once the restore has finished.');
    }
    return { uuid: server.uuid, status };
  },
};
