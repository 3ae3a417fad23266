import type { CliCommand } from '../command.js';
import { listDatabaseHosts } from '../../modules/databases/database-hosts.service.js';

/** `database-host:list`: every database host with how many databases it holds; never a password. */
export const command: CliCommand = {
  name: 'database-host:list',
  usage: '',
  valueOptions: [],
  flagOptions: [],
  async run(ctx) {
    return { hosts: await listDatabaseHosts(ctx.database.db) };
  },
  summary(result) {
    const hosts = result.hosts as {
      name: string;
      engine: string;
      host: string;
      port: number;
      username: string;
      databases: number;
      max_databases: number | null;
    }[];
    if (hosts.length === 0) return 'no database hosts\n';
    return hosts
      .map((h) => `${h.name}\t${h.engine}\t${h.username}@${h.host}:${h.port}\t${h.databases}/${h.max_databases ?? 'unlimited'}\n`)
      .join('');
  },
};
