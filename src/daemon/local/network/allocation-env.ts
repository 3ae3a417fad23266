import type { ServerAllocation } from '../../daemon.js';

/**
 * `SERVER_IP` and `SERVER_PORT`: the primary allocation, as Wings sets them
 * (docs/reference/network-and-allocations.md), confined or not. Confined, SERVER_IP is the address players use,
 * not one of the namespace's: binding it there fails (EADDRNOTAVAIL) unless it
 * is 0.0.0.0; a server binds 0.0.0.0:SERVER_PORT, as eggs do.
 */
export function allocationEnv(allocations: readonly ServerAllocation[] | undefined): Record<string, string> {
  const primary = allocations?.[0];
  return primary ? { SERVER_IP: primary.ip, SERVER_PORT: String(primary.port) } : {};
}
