/**
 * Wings' `{{config.<key>}}` placeholders in config file values: values of
 * the daemon's own that the panel cannot know and leaves in. Eggs use the
 * Docker interface's address (`{{config.docker.interface}}`, or Pelican's
 * `{{config.docker.network.interface}}`) as "the address this server reaches
 * the other servers of its node on" (BungeeCord's egg rewrites its
 * `localhost` backends to it). Here that is:
 *
 * - unconfined, `127.0.0.1`: every server shares the machine's network;
 * - confined, an address of the machine itself, where the service's
 *   firewall publishes every allocation to servers too (docs/reference/network-and-allocations.md): the
 *   server's own primary allocation address when it has a specific one,
 *   else the machine's first non-loopback IPv4 address (`127.0.0.1` is the
 *   server's own loopback in its namespace).
 *
 * A key this does not know is left as written (Wings writes an empty value).
 */
import os from 'node:os';
import type { ServerAllocation } from '../../daemon.js';

const PLACEHOLDER = /\{\{\s?config\.([\w.-]+)\s?\}\}/g;
const INTERFACE_KEYS: ReadonlySet<string> = new Set(['docker.interface', 'docker.network.interface']);

export function resolveDaemonValues(value: string, lookup: (key: string) => string | undefined): string {
  return value.replace(PLACEHOLDER, (placeholder, key: string) => lookup(key) ?? placeholder);
}

/** The lookup for one server's start. */
export function daemonValues(
  confined: boolean,
  allocations: readonly ServerAllocation[] | undefined,
): (key: string) => string | undefined {
  return (key) => (INTERFACE_KEYS.has(key) ? nodeAddress(confined, allocations) : undefined);
}

function nodeAddress(confined: boolean, allocations: readonly ServerAllocation[] | undefined): string {
  if (!confined) return '127.0.0.1';
  const primary = allocations?.[0]?.ip;
  if (primary && primary !== '0.0.0.0') return primary;
  for (const addresses of Object.values(os.networkInterfaces())) {
    const found = addresses?.find((address) => address.family === 'IPv4' && !address.internal);
    if (found) return found.address;
  }
  return '127.0.0.1';
}
