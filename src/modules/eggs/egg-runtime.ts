/**
 * What a server made from an egg runs with (docs/reference/eggs-and-installs.md), composed by the panel
 * for the daemon at every start: the startup command, its environment, the
 * lines that mean "started", the stop command and the config files with
 * Wings' placeholders filled in.
 */
import type { ConfigFileEdit, DaemonServer, ServerAllocation } from '../../daemon/daemon.js';
import type { Queryable } from '../../db/database.js';
import type { ServerRow } from '../../db/schema.js';
import type { EggConfigFile } from './egg-file.js';
import { findEgg, serverVariableValues, type ServerVariableValue } from './eggs.repository.js';
import { eggConfigFiles, eggDoneLines } from './eggs.service.js';

/** What a server's values are taken from: the row, its primary allocation (none: no SERVER_IP/SERVER_PORT) and its variables. */
export interface EggServerValues {
  server: Pick<ServerRow, 'uuid' | 'node' | 'startup' | 'memory_mib' | 'cpu_percent' | 'disk_mib'>;
  primary: ServerAllocation | undefined;
  variables: readonly Pick<ServerVariableValue, 'env_variable' | 'value'>[];
}

/** `{{NAME}}`, Pterodactyl's placeholder in startup commands (no spaces, as its panel matches them). */
const STARTUP_PLACEHOLDER = /\{\{([A-Za-z0-9_]+)\}\}/g;

/**
 * The startup command as people see it (Pterodactyl's StartupCommandService:
 * GET /startup's `startup_command`): each `{{NAME}}` that `values` has
 * replaced by its value, in one pass (a value holding `{{...}}` is not filled
 * again); unknown ones stay as written.
 */
export function renderStartup(raw: string, values: Readonly<Record<string, string>>): string {
  return raw.replace(STARTUP_PLACEHOLDER, (token, name: string) => (Object.hasOwn(values, name) ? values[name]! : token));
}

/**
 * The command the daemon's shell runs: each `{{NAME}}` becomes `${NAME}`, as
 * Pterodactyl's images do (`sed -e 's/{{/${/g' -e 's/}}/}/g'`), and the shell
 * reads the value from the environment. A value is never parsed as shell
 * code: `; rm -rf /` in a variable stays an argument.
 */
export function shellStartup(raw: string): string {
  return raw.replace(STARTUP_PLACEHOLDER, (_token, name: string) => `\${${name}}`);
}

/** The values of startup placeholders: SERVER_MEMORY, SERVER_IP, SERVER_PORT (with an allocation) and every variable. */
export function startupValues({ server, primary, variables }: EggServerValues): Record<string, string> {
  const values: Record<string, string> = {};
  for (const variable of variables) values[variable.env_variable] = variable.value;
  values['SERVER_MEMORY'] = String(server.memory_mib);
  if (primary) {
    values['SERVER_IP'] = primary.ip;
    values['SERVER_PORT'] = String(primary.port);
  }
  return values;
}

/**
 * The environment docs/reference/eggs-and-installs.md lists: every variable, STARTUP (the raw command),
 * SERVER_MEMORY, SERVER_IP, SERVER_PORT, P_SERVER_LOCATION (the server's
 * node), P_SERVER_UUID (the daemon sets it too, and its value wins).
 */
export function serverEnvironment(input: EggServerValues): Record<string, string> {
  return {
    ...startupValues(input),
    STARTUP: input.server.startup ?? '',
    P_SERVER_LOCATION: input.server.node,
    P_SERVER_UUID: input.server.uuid,
  };
}

/** `{{ key }}` in config values: server.*, env.* and config.* (Pterodactyl's EggConfigurationService, Pelican's names too). */
const CONFIG_PLACEHOLDER = /\{\{\s*([\w.-]+)\s*\}\}/g;

/**
 * A config.files placeholder's value, for both Pterodactyl's names
 * (`server.build.default.port`, `server.build.env.X`, `env.X`,
 * `server.build.memory`) and Pelican's (`server.allocations.default.port`,
 * `server.environment.X`, `server.build.memory_limit`). Unknown ones are ''
 * (Pterodactyl's panel does the same). `config.docker.interface` (how a proxy
 * reaches the host's other servers) is the primary allocation's address, or
 * 127.0.0.1 when that is 0.0.0.0.
 */
export function configPlaceholderValue(key: string, input: EggServerValues): string {
  const env = serverEnvironment(input);
  const { server, primary } = input;
  const envName = /^(?:env|server\.build\.env|server\.build\.environment|server\.environment)\.(.+)$/.exec(key)?.[1];
  if (envName !== undefined) {
    if (envName === 'SERVER_MEMORY') return String(server.memory_mib);
    return env[envName] ?? '';
  }
  switch (key) {
    case 'server.build.default.ip':
    case 'server.allocations.default.ip':
      return primary?.ip ?? '';
    case 'server.build.default.port':
    case 'server.allocations.default.port':
      return primary ? String(primary.port) : '';
    case 'server.build.memory':
    case 'server.build.memory_limit':
      return String(server.memory_mib);
    case 'server.build.cpu':
    case 'server.build.cpu_limit':
      return String(server.cpu_percent);
    case 'server.build.disk':
    case 'server.build.disk_space':
      return String(server.disk_mib);
    case 'server.build.swap':
      return '0';
    case 'server.uuid':
      return server.uuid;
    case 'config.docker.interface':
    case 'config.docker.network.interface':
      return primary && primary.ip !== '0.0.0.0' ? primary.ip : '127.0.0.1';
    default:
      return '';
  }
}

function fillConfigValue(value: string, input: EggServerValues): string {
  return value.replace(CONFIG_PLACEHOLDER, (_token, key: string) => configPlaceholderValue(key, input));
}

/** The egg's config.files as the daemon edits them before a start: placeholders filled (in conditional values too). */
export function resolveConfigFiles(files: Readonly<Record<string, EggConfigFile>>, input: EggServerValues): ConfigFileEdit[] {
  return Object.entries(files).map(([file, spec]) => {
    const find: Record<string, string | Record<string, string>> = {};
    for (const [key, value] of Object.entries(spec.find)) {
      find[key] =
        typeof value === 'string'
          ? fillConfigValue(value, input)
          : Object.fromEntries(Object.entries(value).map(([ifValue, to]) => [ifValue, fillConfigValue(to, input)]));
    }
    return { file, parser: spec.parser, find };
  });
}

/**
 * What a server made from an egg adds to the DaemonServer a start uses:
 * `startup` in the shell's form, `environment`, `doneLines`, `configFiles`,
 * and the egg's `config.stop` when the server has no stop command of its
 * own. A server without an egg (or whose egg is gone) gets nothing: its
 * startup runs as written, as before eggs.
 */
export async function eggDaemonFields(
  db: Queryable,
  server: ServerRow,
  allocations: readonly ServerAllocation[],
): Promise<Partial<Pick<DaemonServer, 'startup' | 'stopCommand' | 'environment' | 'doneLines' | 'configFiles'>>> {
  if (server.egg_id === null) return {};
  const egg = await findEgg(db, server.egg_id);
  if (!egg) return {};
  const input: EggServerValues = { server, primary: allocations[0], variables: await serverVariableValues(db, server.id) };
  return {
    startup: server.startup === null ? null : shellStartup(server.startup),
    stopCommand: server.stop_command ?? egg.config_stop,
    environment: serverEnvironment(input),
    doneLines: eggDoneLines(egg),
    configFiles: resolveConfigFiles(eggConfigFiles(egg), input),
  };
}
