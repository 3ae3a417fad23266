import type { CliCommand } from '../command.js';
import type { ServiceCommand } from './service.js';

/**
 * Every admin command by name (docs/reference/cli.md). Each is loaded only when asked for:
 * `user:create` should not pay for loading the HTTP app.
 */
export const COMMANDS: Readonly<Record<string, () => Promise<CliCommand | ServiceCommand>>> = {
  migrate: async () => (await import('./migrate.js')).command,
  serve: async () => (await import('./serve.js')).command,
  worker: async () => (await import('./worker.js')).command,
  'user:create': async () => (await import('./user-create.js')).command,
  'user:password': async () => (await import('./user-password.js')).command,
  'server:create': async () => (await import('./server-create.js')).command,
  'server:status': async () => (await import('./server-status.js')).command,
  'server:update': async () => (await import('./server-update.js')).command,
  'server:delete': async () => (await import('./server-delete.js')).command,
  'key:create': async () => (await import('./key-create.js')).command,
  'key:revoke': async () => (await import('./key-revoke.js')).command,
  'subuser:add': async () => (await import('./subuser-add.js')).command,
  'backup:create': async () => (await import('./backup-create.js')).command,
  'backup:import': async () => (await import('./backup-import.js')).command,
  'allocation:add': async () => (await import('./allocation-add.js')).command,
  'allocation:list': async () => (await import('./allocation-list.js')).command,
  'allocation:remove': async () => (await import('./allocation-remove.js')).command,
  'database-host:add': async () => (await import('./database-host-add.js')).command,
  'database-host:list': async () => (await import('./database-host-list.js')).command,
  'database-host:remove': async () => (await import('./database-host-remove.js')).command,
  'servers:stop': async () => (await import('./servers-stop.js')).command,
  'image:build': async () => (await import('./image-build.js')).command,
  'image:import': async () => (await import('./image-import.js')).command,
  'image:list': async () => (await import('./image-list.js')).command,
  'image:remove': async () => (await import('./image-remove.js')).command,
  'server:reinstall': async () => (await import('./server-reinstall.js')).command,
  'egg:import': async () => (await import('./egg-import.js')).command,
  'egg:list': async () => (await import('./egg-list.js')).command,
};

export function isServiceCommand(command: CliCommand | ServiceCommand): command is ServiceCommand {
  return 'service' in command && command.service === true;
}
