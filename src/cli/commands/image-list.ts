import type { CliCommand } from '../command.js';

interface ListedImage {
  name: string;
  size_bytes: number;
  source: string;
  created_at: string | null;
}

/**
 * `image:list` (docs/reference/eggs-and-installs.md, docs/reference/cli.md): every image on this node, `host` first;
 * `created_at` is ISO 8601 (null for `host`, which was never made).
 */
export const command: CliCommand = {
  name: 'image:list',
  usage: '',
  valueOptions: [],
  async run(ctx) {
    const images = await ctx.daemon.images.list();
    return {
      images: images.map((image): ListedImage => ({
        name: image.name,
        size_bytes: image.sizeBytes,
        source: image.source,
        created_at: image.createdAt > 0 ? new Date(image.createdAt).toISOString() : null,
      })),
    };
  },
  summary(result) {
    const rows = result.images as ListedImage[];
    return rows
      .map((row) => `${row.name}\t${row.source}\t${(row.size_bytes / 2 ** 20).toFixed(1)} MiB\t${row.created_at ?? '-'}\n`)
      .join('');
  },
};
