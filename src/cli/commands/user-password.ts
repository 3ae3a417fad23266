import { requireOption, type CliCommand } from '../command.js';
import { setPassword } from '../../modules/account/account.service.js';
import { readNewPassword, requireUser } from './lookups.js';

/**
 * `user:password --user USER`, the new password on standard input, one line
 * (docs/reference/cli.md). Every session of the user ends with the change; their API
 * keys keep working.
 */
export const command: CliCommand = {
  name: 'user:password',
  usage: '--user USER (the new password on standard input, one line)',
  valueOptions: ['user'],
  async run(ctx, options) {
    const reference = requireOption(options, 'user');
    const db = ctx.database.db;
    const user = await requireUser(db, reference);
    await setPassword(db, user.id, await readNewPassword(ctx), null);
    return { uuid: user.uuid, username: user.username };
  },
};
