/**
 * A server's live state and figures (GET /servers/{server}/resources,
 * docs/reference/servers.md#the-server-routes): read by the server list, and
 * stale after a power action.
 */
import { useQuery } from '@tanstack/react-query';
import { get } from './client';
import { serverUrl } from './servers';
import type { Item, Resources } from './types';

/** The same key server.tsx reads the header's state under. */
export const resourcesKey = (server: string) => ['resources', server] as const;

export function useServerResources(server: string, options: { refetchIntervalMs?: number } = {}) {
  return useQuery({
    queryKey: resourcesKey(server),
    queryFn: ({ signal }) => get<Item<'stats', Resources>>(serverUrl(server, 'resources'), signal),
    refetchInterval: options.refetchIntervalMs ?? false,
  });
}
