import { CliError, requireOption, type CliCommand } from '../command.js';
import { findApiKeyByIdentifier, revokeApiKey } from '../../modules/keys/keys.repository.js';

/**
 * `key:revoke --identifier ID` (docs/reference/cli.md): the key stops working at once, in
 * every instance (keys are read on every request). Revoking a revoked key
 * succeeds; an unknown identifier fails.
 */
export const command: CliCommand = {
  name: 'key:revoke',
  usage: '--identifier ID',
  valueOptions: ['identifier'],
  async run(ctx, options) {
    const identifier = requireOption(options, 'identifier');
    const db = ctx.database.db;
    const key = await findApiKeyByIdentifier(db, identifier);
    if (!key) throw new CliError(`No API key has the identifier "${identifier}".`);
    await revokeApiKey(db, identifier, ctx.clock.now());
    return { revoked: true };
  },
};
