import { CliError, requireOption, type CliCommand } from '../command.js';
import { createApiKey, isIpOrCidr } from '../../modules/keys/keys.service.js';
import { characters, listOption, optionalOption, requireUser } from './lookups.js';

const DESCRIPTION_MAX = 500;

/** `key:create --user USER [--description D] [--allowed-ips IP,CIDR,...]` (docs/reference/cli.md). The token is shown only here. */
export const command: CliCommand = {
  name: 'key:create',
  usage: '--user USER [--description D] [--allowed-ips IP,CIDR,...]',
  valueOptions: ['user', 'description', 'allowed-ips'],
  async run(ctx, options) {
    const reference = requireOption(options, 'user');
    const description = optionalOption(options, 'description') ?? '';
    if (characters(description) > DESCRIPTION_MAX)
      throw new CliError(`--description must be at most ${DESCRIPTION_MAX} characters`);
    const ips = options['allowed-ips'];
    const allowedIps = typeof ips === 'string' ? listOption(ips) : [];
    for (const entry of allowedIps) {
      if (!isIpOrCidr(entry)) throw new CliError(`--allowed-ips: "${entry}" is not an IP address or CIDR range`);
    }
    if (typeof ips === 'string' && allowedIps.length === 0)
      throw new CliError('--allowed-ips needs at least one IP address or CIDR range');
    const db = ctx.database.db;
    const user = await requireUser(db, reference);
    const { identifier, token } = await createApiKey(db, { userId: user.id, description, allowedIps, now: ctx.clock.now() });
    return { identifier, token };
  },
};
