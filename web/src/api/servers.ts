/**
 * The server list and one server (docs/reference/servers.md#the-server-routes):
 * their URLs and query keys, shared by every page that reads or invalidates
 * them, so no page imports another to reach them.
 */
import { get } from './client';
import type { List, Server } from './types';

export const serversUrl = '/api/client?per_page=100';

/** Every route below one server: `serverUrl('abc', 'backups')` → `/api/client/servers/abc/backups`. */
export const serverUrl = (server: string, tail = '') =>
  `/api/client/servers/${encodeURIComponent(server)}${tail ? `/${tail}` : ''}`;

export const serversKey = ['servers'] as const;
export const serverKey = (id: string) => ['server', id] as const;

export const serversQuery = {
  queryKey: serversKey,
  queryFn: ({ signal }: { signal: AbortSignal }) => get<List<Server>>(serversUrl, signal),
};
