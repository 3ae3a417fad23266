import { CliError, requireOption, type CliCommand } from '../command.js';
import { COMMAND_MAX_BYTES } from '../../modules/tasks/tasks.rules.js';
import { createServer } from '../../modules/servers/servers.service.js';
import { characters, optionalOption, requireUser } from './lookups.js';

const MAX_BACKUP_LIMIT = 2_147_483_647;

export function parseBackupLimit(value: string | undefined): number {
  if (value === undefined) return 10;
  if (!/^\d+$/.test(value) || Number(value) > MAX_BACKUP_LIMIT) {
    throw new CliError(`--backup-limit must be a whole number from 0 to ${MAX_BACKUP_LIMIT}, got "${value}"`);
  }
  return Number(value);
}

/** A line the daemon writes to the process's standard input: the same rule as a console command. */
function checkStopCommand(line: string | undefined): void {
  if (line === undefined) return;
  if (/[\r\n]/.test(line)) throw new CliError('--stop-command must be a single line');
  if (Buffer.byteLength(line, 'utf8') > COMMAND_MAX_BYTES)
    throw new CliError(`--stop-command must be at most ${COMMAND_MAX_BYTES} bytes`);
}

/**
 * `server:create --owner USER --name N [--startup CMD] [--stop-command LINE] [--backup-limit N]`
 * (CONTRACT.md). Without --startup the server has a volume but no process.
 */
export const command: CliCommand = {
  name: 'server:create',
  usage: '--owner USER --name N [--startup CMD] [--stop-command LINE] [--backup-limit N]',
  valueOptions: ['owner', 'name', 'startup', 'stop-command', 'backup-limit'],
  async run(ctx, options) {
    const ownerReference = requireOption(options, 'owner');
    const name = requireOption(options, 'name');
    if (characters(name) > 191) throw new CliError('--name must be at most 191 characters');
    const startup = optionalOption(options, 'startup');
    const stopCommand = optionalOption(options, 'stop-command');
    checkStopCommand(stopCommand);
    const backupLimit = parseBackupLimit(optionalOption(options, 'backup-limit'));

    const db = ctx.database.db;
    const owner = await requireUser(db, ownerReference);
    // The row and its volume together: a volume that cannot be made leaves no server behind.
    const server = await db.transaction().execute((trx) =>
      createServer(trx, ctx.daemon, {
        ownerId: owner.id,
        name,
        startup: startup ?? null,
        stopCommand: stopCommand ?? null,
        backupLimit,
        now: ctx.clock.now(),
      }),
    );
    return { uuid: server.uuid, identifier: server.uuid_short, name: server.name };
  },
};
