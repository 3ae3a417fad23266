import { CliError, requireOption, type CliCommand } from '../command.js';
import { findServersOnImage } from '../../modules/images/images.repository.js';
import { imageCommandError } from './image-errors.js';

/**
 * `image:remove --name N` (docs/reference/eggs-and-installs.md, docs/reference/cli.md): refused while any server is
 * set to run on it (servers.image = N, running or not) and for `host`. A box
 * still running on it (a server moved to another image since its start) keeps
 * its version until it stops (docs/IMAGES.md).
 */
export const command: CliCommand = {
  name: 'image:remove',
  usage: '--name NAME',
  valueOptions: ['name'],
  async run(ctx, options) {
    const name = requireOption(options, 'name');
    const users = await findServersOnImage(ctx.database.db, name, 3);
    if (users.length > 0) {
      const named = users.map((row) => row.uuid).join(', ');
      throw new CliError(
        `the image ${name} is used by server${users.length > 1 ? 's' : ''} ${named}${users.length === 3 ? ', ...' : ''}`,
      );
    }
    try {
      await ctx.daemon.images.remove(name);
    } catch (err) {
      throw imageCommandError(err);
    }
    return { removed: true };
  },
};
