/**
 * A server's `feature_limits` (docs/reference/servers.md#the-server-routes):
 * how many allocations, databases and backups its users may have.
 */
import type { Server } from './types';

export type FeatureLimit = 'allocations' | 'databases' | 'backups';

/** The limit, 0 when the server object leaves it out (nothing may be added). */
export function featureLimit(server: Server, which: FeatureLimit): number {
  return server.attributes.feature_limits[which] ?? 0;
}
