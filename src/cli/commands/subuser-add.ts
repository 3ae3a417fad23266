import { CliError, requireOption, type CliCommand } from '../command.js';
import { isPermission, PERMISSIONS } from '../../http/permissions.js';
import { upsertSubuser } from '../../modules/subusers/subusers.repository.js';
import { listOption, requireServer, requireUser } from './lookups.js';

/**
 * `subuser:add --server S --user USER --permissions p1,p2,...` (docs/reference/cli.md).
 * On an existing subuser the permissions are replaced, not merged; the
 * server's owner holds every permission already and cannot be a subuser.
 */
export const command: CliCommand = {
  name: 'subuser:add',
  usage: '--server S --user USER --permissions p1,p2,...',
  valueOptions: ['server', 'user', 'permissions'],
  async run(ctx, options) {
    const serverReference = requireOption(options, 'server');
    const userReference = requireOption(options, 'user');
    const permissions = listOption(requireOption(options, 'permissions'));
    const unknown = permissions.filter((p) => !isPermission(p));
    if (unknown.length > 0) {
      throw new CliError(
        `unknown permission${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (known: ${PERMISSIONS.join(', ')})`,
      );
    }
    if (permissions.length === 0) throw new CliError('--permissions needs at least one permission');
    const db = ctx.database.db;
    const server = await requireServer(db, serverReference);
    const user = await requireUser(db, userReference);
    if (user.id === server.owner_id) throw new CliError(`"${user.username}" owns this server and cannot also be its subuser.`);
    const row = await upsertSubuser(db, { serverId: server.id, userId: user.id, permissions, now: ctx.clock.now() });
    return { server: server.uuid, user: user.uuid, permissions: JSON.parse(row.permissions) as string[] };
  },
};
