import type { CliCommand } from '../command.js';
import { listEggs } from '../../modules/eggs/eggs.repository.js';
import { eggImageNames } from '../../modules/eggs/eggs.service.js';

/** `egg:list` (docs/reference/eggs-and-installs.md, docs/reference/cli.md): every egg, oldest first, with its images' names (the default first). */
export const command: CliCommand = {
  name: 'egg:list',
  usage: '',
  valueOptions: [],
  async run(ctx) {
    const eggs = await listEggs(ctx.database.db);
    return { eggs: eggs.map((egg) => ({ id: egg.id, name: egg.name, docker_images: eggImageNames(egg) })) };
  },
  summary(result) {
    const eggs = result.eggs as { id: number; name: string; docker_images: string[] }[];
    if (eggs.length === 0) return 'no eggs\n';
    return eggs.map((egg) => `${egg.id}\t${egg.name}\t${egg.docker_images.join(', ')}\n`).join('');
  },
};
