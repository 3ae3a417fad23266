import { item } from '../../http/envelopes.js';
import type { ServerEggVariable } from './startup.repository.js';

/** Pterodactyl's client EggVariableTransformer; only ever given user-viewable variables. */
export function eggVariableItem(variable: ServerEggVariable) {
  return item('egg_variable', {
    name: variable.name,
    description: variable.description,
    env_variable: variable.env_variable,
    default_value: variable.default_value,
    server_value: variable.server_value,
    is_editable: variable.user_editable === 1,
    rules: variable.rules,
  });
}

/** GET /startup: the viewable variables and the startup command, raw and filled in, with the egg's images. */
export function startupList(
  variables: readonly ServerEggVariable[],
  meta: { startupCommand: string; rawStartupCommand: string; dockerImages: Record<string, string> },
) {
  return {
    object: 'list',
    data: variables.map(eggVariableItem),
    meta: {
      startup_command: meta.startupCommand,
      docker_images: meta.dockerImages,
      raw_startup_command: meta.rawStartupCommand,
    },
  };
}
