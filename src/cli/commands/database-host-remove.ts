import { CliError, requireOption, type CliCommand } from '../command.js';
import { DatabaseHostError, removeDatabaseHost } from '../../modules/databases/database-hosts.service.js';

/** `database-host:remove --name N`: refused while the host holds databases. */
export const command: CliCommand = {
  name: 'database-host:remove',
  usage: '--name N',
  valueOptions: ['name'],
  flagOptions: [],
  async run(ctx, options) {
    const name = requireOption(options, 'name');
    await removeDatabaseHost(ctx.database.db, name).catch((error: unknown) => {
      if (error instanceof DatabaseHostError) throw new CliError(error.message);
      throw error;
    });
    return { removed: name };
  },
  summary(result) {
    return `removed database host ${String(result.removed)}\n`;
  },
};
