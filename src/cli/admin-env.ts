import path from 'node:path';
import type { Config } from '../config.js';

/**
 * The environment an admin command needs to reach the same data as this
 * service, as a shell prefix (`DATA_DIR=/srv/q `): empty when the defaults
 * apply. Without it, `npx quetzal user:password` run from another shell would
 * open (and create) a second database under ./data.
 */
export function adminCommandEnv(config: Pick<Config, 'dataDir' | 'databaseUrl'>, cwd = process.cwd()): string {
  const parts: string[] = [];
  if (config.dataDir !== path.resolve(cwd, 'data')) parts.push(`DATA_DIR=${shellQuote(config.dataDir)}`);
  if (config.databaseUrl !== `sqlite:${path.join(config.dataDir, 'quetzal.sqlite')}`) {
    parts.push(`DATABASE_URL=${shellQuote(config.databaseUrl)}`);
  }
  return parts.map((part) => `${part} `).join('');
}

/** A word the shell reads back unchanged: bare when it is plain, else in single quotes. */
export function shellQuote(value: string): string {
  if (/^[\w@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
