import { CliError, type CliCommand } from '../command.js';
import { findAllocationsWithHolder } from '../../modules/allocations/allocations.repository.js';
import { optionalOption, requireServer } from './lookups.js';

/**
 * `allocation:list [--server S] [--free]` (docs/reference/network-and-allocations.md, docs/reference/cli.md): every
 * allocation in the order added, a server's, or the free ones; `server` is the
 * holder's UUID or null.
 */
export const command: CliCommand = {
  name: 'allocation:list',
  usage: '[--server S] [--free]',
  valueOptions: ['server'],
  flagOptions: ['free'],
  async run(ctx, options) {
    const reference = optionalOption(options, 'server');
    const free = options.free === true;
    if (reference !== undefined && free)
      throw new CliError('--server and --free exclude each other (a server holds no free allocation)');
    const db = ctx.database.db;
    const server = reference === undefined ? undefined : await requireServer(db, reference);
    const rows = await findAllocationsWithHolder(db, { ...(server ? { serverId: server.id } : {}), free });
    return {
      allocations: rows.map((row) => ({
        id: row.id,
        ip: row.ip,
        ip_alias: row.ip_alias,
        port: row.port,
        server: row.server_uuid,
        notes: row.notes,
      })),
    };
  },
  summary(result) {
    const rows = result.allocations as { id: number; ip: string; ip_alias: string | null; port: number; server: string | null }[];
    if (rows.length === 0) return 'no allocations\n';
    return rows.map((row) => `${row.id}\t${row.ip}:${row.port}\t${row.ip_alias ?? '-'}\t${row.server ?? 'free'}\n`).join('');
  },
};
