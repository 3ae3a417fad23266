import path from 'node:path';
import { CliError, requireOption, type CliCommand } from '../command.js';
import { HttpError } from '../../http/errors.js';
import { findServerByReference } from '../../modules/servers/servers.repository.js';
import { BackupImportError, importBackup } from '../../modules/backups/backups.service.js';
import { backupAttributes } from '../../modules/backups/backups.transformer.js';

/**
 * `backup:import --server S --file PATH.tar.gz [--name N]`: registers an existing
 * gzip tarball as a completed backup (docs/reference/cli.md). Its contents are judged at
 * restore time, not here.
 */
export const command: CliCommand = {
  name: 'backup:import',
  usage: '--server S --file PATH.tar.gz [--name N]',
  valueOptions: ['server', 'file', 'name'],
  async run(ctx, options) {
    const reference = requireOption(options, 'server');
    const file = path.resolve(requireOption(options, 'file'));
    const name = typeof options.name === 'string' ? options.name : undefined;
    if (name !== undefined && [...name.trim()].length > 191) throw new CliError('--name must be at most 191 characters');
    const db = ctx.database.db;
    const server = await findServerByReference(db, reference);
    if (!server) throw new CliError(`No server matches "${reference}".`);
    try {
      const backup = await importBackup({ db, clock: ctx.clock, daemon: ctx.daemon, config: ctx.config }, server, { file, name });
      return backupAttributes(backup);
    } catch (err) {
      if (err instanceof HttpError || err instanceof BackupImportError) throw new CliError(err.message);
      throw err;
    }
  },
};
