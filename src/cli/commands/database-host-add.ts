import { CliError, requireOption, type CliCommand } from '../command.js';
import { loadAppKey } from '../../app-key.js';
import { addDatabaseHost, DatabaseHostError } from '../../modules/databases/database-hosts.service.js';
import { optionalOption } from './lookups.js';

/**
 * `database-host:add --name N --url mysql://user:pass@host:port|postgres://user:pass@host:port[/db] [--max-databases N]`
 * (docs/DATABASES.md): checks the account can create databases and users, then saves it with its password sealed.
 */
export const command: CliCommand = {
  name: 'database-host:add',
  usage: '--name N --url URL [--max-databases N]',
  valueOptions: ['name', 'url', 'max-databases'],
  flagOptions: [],
  async run(ctx, options) {
    const name = requireOption(options, 'name');
    if (!/^[\w.-]{1,191}$/.test(name)) throw new CliError('--name must be 1 to 191 letters, digits, dots, dashes or underscores');
    const max = optionalOption(options, 'max-databases');
    if (max !== undefined && !/^\d{1,9}$/.test(max)) throw new CliError('--max-databases must be a whole number');
    const appKey = loadAppKey(ctx.config.dataDir, { APP_KEY: ctx.config.appKey });
    const host = await addDatabaseHost(ctx.database.db, appKey, {
      name,
      url: requireOption(options, 'url'),
      maxDatabases: max === undefined ? null : Number(max),
      now: ctx.clock.now(),
    }).catch((error: unknown) => {
      if (error instanceof DatabaseHostError) throw new CliError(error.message);
      throw error;
    });
    return { host };
  },
  summary(result) {
    const host = result.host as { name: string; engine: string; host: string; port: number };
    return `added database host ${host.name} (${host.engine} ${host.host}:${host.port})\n`;
  },
};
