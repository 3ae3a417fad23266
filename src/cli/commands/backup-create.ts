import { CliError, requireOption, type CliCommand } from '../command.js';
import { HttpError } from '../../http/errors.js';
import { SYSTEM_ACTOR } from '../../modules/activity/activity.recorder.js';
import { findServerByReference } from '../../modules/servers/servers.repository.js';
import { createBackupAndWait } from '../../modules/backups/backups.service.js';
import { backupAttributes } from '../../modules/backups/backups.transformer.js';

/** `backup:create --server S [--name N]`: makes a backup now and waits for it (docs/reference/cli.md). */
export const command: CliCommand = {
  name: 'backup:create',
  usage: '--server S [--name N]',
  valueOptions: ['server', 'name'],
  async run(ctx, options) {
    const reference = requireOption(options, 'server');
    const name = typeof options.name === 'string' ? options.name : undefined;
    if (name !== undefined && [...name.trim()].length > 191) throw new CliError('--name must be at most 191 characters');
    const db = ctx.database.db;
    const server = await findServerByReference(db, reference);
    if (!server) throw new CliError(`No server matches "${reference}".`);
    const deps = { db, clock: ctx.clock, daemon: ctx.daemon, config: ctx.config };
    let outcome;
    try {
      outcome = await createBackupAndWait(deps, server, SYSTEM_ACTOR, { name });
    } catch (err) {
      if (err instanceof HttpError) throw new CliError(err.detail);
      throw err;
    }
    if (!outcome.backup) throw new CliError('The backup was deleted before it finished.');
    if (outcome.error !== undefined) {
      const reason = outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
      throw new CliError(`The backup failed: ${reason}`);
    }
    return backupAttributes(outcome.backup);
  },
};
