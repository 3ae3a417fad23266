/**
 * The environment a server's panel-given variables add (docs/reference/eggs-and-installs.md), for both
 * launchers: the primary allocation's SERVER_IP and SERVER_PORT as the
 * fallback, then DaemonServer.environment (STARTUP, SERVER_MEMORY, the egg's
 * variables...) over it. What the launchers set themselves (HOME, PATH, USER,
 * P_SERVER_UUID...) is applied after this and always wins.
 */
import type { ServerAllocation } from '../../daemon.js';
import { allocationEnv } from '../network/allocation-env.js';

/** Never taken from the panel's environment: the daemon's own values identify and locate the server. */
const PROTECTED_NAMES: ReadonlySet<string> = new Set(['HOME', 'PATH', 'USER', 'P_SERVER_UUID']);

/** A name a shell can read back as `$NAME`; anything else (`=`, NUL, spaces) would corrupt the environment block. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function serverExtraEnv(
  allocations: readonly ServerAllocation[] | undefined,
  environment: Readonly<Record<string, string>> | undefined,
): Record<string, string> {
  const env = allocationEnv(allocations);
  for (const [name, value] of Object.entries(environment ?? {})) {
    if (PROTECTED_NAMES.has(name) || !ENV_NAME.test(name) || typeof value !== 'string' || value.includes('\0')) continue;
    env[name] = value;
  }
  return env;
}
