/**
 * A server's `feature_limits` (docs/reference/servers.md#the-server-routes):
 * how many allocations, databases and backups its users may have. The
 * server object's type names only `backups`; the others are read here.
 */
import type { Server } from './types';

export type FeatureLimit = 'allocations' | 'databases' | 'backups';

/** The limit, 0 when the server object leaves it out (nothing may be added). */
export function featureLimit(server: Server, which: FeatureLimit): number {
  const limits: Partial<Record<FeatureLimit, number>> = server.attributes.feature_limits;
  return limits[which] ?? 0;
}
