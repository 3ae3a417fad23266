import fs from 'node:fs/promises';
import path from 'node:path';
import { CliError, requireOption, type CliCommand } from '../command.js';
import { EggFileError } from '../../modules/eggs/egg-file.js';
import { importEgg } from '../../modules/eggs/eggs.service.js';

/** Egg files are a few hundred KiB at most; a larger file is not an egg. */
const MAX_EGG_FILE_BYTES = 8 * 1024 * 1024;

/**
 * `egg:import --file PATH` (docs/reference/eggs-and-installs.md, docs/reference/cli.md): a Pterodactyl (PTDL_v1,
 * PTDL_v2) or Pelican (PLCN_v1..v3) egg export. An egg of the same uuid is
 * updated in place. Prints `{"id","name"}`; an invalid egg exits 1 with one
 * line saying why, and nothing is written.
 */
export const command: CliCommand = {
  name: 'egg:import',
  usage: '--file PATH',
  valueOptions: ['file'],
  async run(ctx, options) {
    const file = path.resolve(requireOption(options, 'file'));
    const stats = await fs.stat(file).catch(() => null);
    if (!stats?.isFile()) throw new CliError(`--file ${file} is not a readable file`);
    if (stats.size > MAX_EGG_FILE_BYTES) throw new CliError(`--file ${file} is larger than an egg file can be (8 MiB)`);
    const content = await fs.readFile(file, 'utf8');
    try {
      const egg = await importEgg(ctx.database.db, content, ctx.clock.now());
      return { id: egg.id, name: egg.name };
    } catch (error) {
      if (error instanceof EggFileError) throw new CliError(`${path.basename(file)} is not a valid egg: ${error.message}`);
      throw error;
    }
  },
};
