import { CliError, requireOption, type CliCommand } from '../command.js';
import { updateServerSettings, type ServerSettingsUpdate } from '../../modules/settings/settings.repository.js';
import { parseAllocationLimit, parseDatabaseLimit } from './allocation-options.js';
import { characters, optionalOption, requireServer } from './lookups.js';
import { checkStopCommand, parseBackupLimit, parseLimitFlag } from './server-create.js';

const LIMIT_COLUMNS = {
  memory: 'memory_mib',
  cpu: 'cpu_percent',
  disk: 'disk_mib',
  pids: 'pids',
  inodes: 'inodes',
} as const;

/**
 * `server:update --server S` with any of `--name N --startup CMD --stop-command LINE --image NAME --memory
 * --cpu --disk --pids --inodes --allocation-limit N --backup-limit N` (docs/reference/cli.md, docs/reference/eggs-and-installs.md). Each value is
 * checked as server:create checks it; `--image` must exist on this node (image:list). Nothing is changed
 * unless every value is valid; one UPDATE writes them all. A running server keeps what it started with: the
 * change applies at its next start. `--database-limit` is not taken: there are no databases yet (docs/reference/accounts.md).
 */
export const command: CliCommand = {
  name: 'server:update',
  usage:
    '--server S [--name N] [--startup CMD] [--stop-command LINE] [--image NAME] [--memory MiB] [--cpu PERCENT] [--disk MiB]' +
    ' [--pids N] [--inodes N] [--allocation-limit N] [--backup-limit N] [--database-limit N]',
  valueOptions: [
    'server',
    'name',
    'startup',
    'stop-command',
    'image',
    'memory',
    'cpu',
    'disk',
    'pids',
    'inodes',
    'allocation-limit',
    'database-limit',
    'backup-limit',
  ],
  async run(ctx, options) {
    const reference = requireOption(options, 'server');
    const changes: ServerSettingsUpdate = {};
    const name = optionalOption(options, 'name');
    if (name !== undefined) {
      if (characters(name) > 191) throw new CliError('--name must be at most 191 characters');
      changes.name = name;
    }
    const startup = optionalOption(options, 'startup');
    if (startup !== undefined) changes.startup = startup;
    const stopCommand = optionalOption(options, 'stop-command');
    checkStopCommand(stopCommand);
    if (stopCommand !== undefined) changes.stop_command = stopCommand;
    for (const flag of Object.keys(LIMIT_COLUMNS) as (keyof typeof LIMIT_COLUMNS)[]) {
      const value = optionalOption(options, flag);
      if (value !== undefined) changes[LIMIT_COLUMNS[flag]] = parseLimitFlag(flag, value);
    }
    const allocationLimit = optionalOption(options, 'allocation-limit');
    if (allocationLimit !== undefined) changes.allocation_limit = parseAllocationLimit(allocationLimit);
    const databaseLimit = optionalOption(options, 'database-limit');
    if (databaseLimit !== undefined) changes.database_limit = parseDatabaseLimit(databaseLimit);
    const backupLimit = optionalOption(options, 'backup-limit');
    if (backupLimit !== undefined) changes.backup_limit = parseBackupLimit(backupLimit);
    const image = optionalOption(options, 'image');
    if (image !== undefined) {
      if (characters(image) > 191) throw new CliError('--image must be at most 191 characters');
      if (!(await ctx.daemon.images.get(image)))
        throw new CliError(`No image named "${image}" on this node (image:list shows them).`);
      changes.image = image;
    }
    const server = await requireServer(ctx.database.db, reference);
    if (Object.keys(changes).length === 0)
      throw new CliError(`Nothing to update: give at least one of ${command.usage.slice(12)}`);
    const updated = await updateServerSettings(ctx.database.db, server.id, changes, ctx.clock.now());
    if (!updated) throw new CliError(`No server matches "${reference}".`);
    return { uuid: updated.uuid, identifier: updated.uuid_short, name: updated.name };
  },
};
