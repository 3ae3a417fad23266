import path from 'node:path';
import { requireOption, type CliCommand } from '../command.js';
import { imageCommandError, showProgress } from './image-errors.js';

/**
 * `image:import --name N --file PATH` (docs/reference/eggs-and-installs.md, docs/reference/cli.md): a `docker save`
 * archive or an OCI archive becomes image N (replacing one of that name
 * atomically, as image:build does); skopeo and umoci do the unpacking.
 */
export const command: CliCommand = {
  name: 'image:import',
  usage: '--name NAME --file PATH',
  valueOptions: ['name', 'file'],
  async run(ctx, options) {
    const name = requireOption(options, 'name');
    const file = path.resolve(requireOption(options, 'file'));
    try {
      const image = await ctx.daemon.images.import(name, file, showProgress);
      return { name: image.name, size_bytes: image.sizeBytes };
    } catch (err) {
      throw imageCommandError(err);
    }
  },
};
