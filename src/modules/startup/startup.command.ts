import { renderStartup } from '../eggs/egg-runtime.js';
import type { ServerEggVariable } from './startup.repository.js';

/** What the startup command's built-in placeholders are filled with: the server's memory and primary allocation. */
export interface StartupContext {
  memoryMiB: number;
  /** The primary allocation; null leaves `{{SERVER_IP}}` and `{{SERVER_PORT}}` as written (the server has none). */
  allocation: { ip: string; port: number } | null;
}

/**
 * The startup command as Pterodactyl's StartupCommandService renders it for
 * people (GET /startup, the server object's `invocation`): `{{SERVER_MEMORY}}`,
 * `{{SERVER_IP}}`, `{{SERVER_PORT}}` and each `{{VARIABLE}}` filled in; the
 * value of a variable the user may not see, or of every variable when
 * `hideValues` (a viewer without `startup.read`), reads `[hidden]`.
 */
export function renderStartupCommand(
  raw: string,
  context: StartupContext,
  variables: readonly ServerEggVariable[],
  hideValues = false,
): string {
  const values: Record<string, string> = { SERVER_MEMORY: String(context.memoryMiB) };
  if (context.allocation) {
    values['SERVER_IP'] = context.allocation.ip;
    values['SERVER_PORT'] = String(context.allocation.port);
  }
  for (const variable of variables) {
    const shown = variable.user_viewable === 1 && !hideValues;
    values[variable.env_variable] = shown ? (variable.server_value ?? variable.default_value) : '[hidden]';
  }
  return renderStartup(raw, values);
}
