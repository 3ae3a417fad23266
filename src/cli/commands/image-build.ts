import { requireOption, type CliCommand } from '../command.js';
import { optionalOption } from './lookups.js';
import { imageCommandError, showProgress } from './image-errors.js';

/**
 * `image:build --name N --packages "P ..." [--suite SUITE]` (docs/reference/eggs-and-installs.md,
 * docs/reference/cli.md): builds an image from Debian's packages with mmdebstrap (a
 * minute or so; its progress goes to standard error), or rebuilds it: the new
 * version is switched in atomically, running servers keep the old one until
 * their next start (docs/IMAGES.md).
 */
export const command: CliCommand = {
  name: 'image:build',
  usage: '--name NAME --packages "P ..." [--suite SUITE]',
  valueOptions: ['name', 'packages', 'suite'],
  async run(ctx, options) {
    const name = requireOption(options, 'name');
    const packages = requireOption(options, 'packages').split(/[\s,]+/);
    const suite = optionalOption(options, 'suite');
    try {
      const image = await ctx.daemon.images.build(name, { packages, ...(suite ? { suite } : {}) }, showProgress);
      return { name: image.name, size_bytes: image.sizeBytes };
    } catch (err) {
      throw imageCommandError(err);
    }
  },
};
