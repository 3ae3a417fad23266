/**
 * Every HTTP call of the Network section (docs/reference/network-and-allocations.md): the
 * server's allocations, each change with its TanStack Query hook. The server
 * object lists the allocations too (`relationships.allocations`), so every
 * change refreshes it as well as the list.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { del, get, post } from './client';
import { serverKey, serverUrl } from './servers';
import type { Item, List } from './types';

/** Pterodactyl's `allocation`. */
export interface Allocation {
  id: number;
  ip: string;
  ip_alias: string | null;
  port: number;
  notes: string | null;
  is_default: boolean;
}

const allocationsKey = (server: string) => ['allocations', server] as const;
const allocationUrl = (server: string, id?: number, tail = '') =>
  serverUrl(server, `network/allocations${id === undefined ? '' : `/${id}`}${tail}`);

/** `ip:port` (or `alias:port`), how an allocation is named on the page and in its buttons' names. */
export const allocationName = (allocation: Allocation) => `${allocation.ip_alias ?? allocation.ip}:${allocation.port}`;

export function useAllocations(server: string, enabled = true) {
  return useQuery({
    queryKey: allocationsKey(server),
    queryFn: async ({ signal }) => {
      const list = await get<List<Item<'allocation', Allocation>>>(allocationUrl(server), signal);
      return list.data.map((item) => item.attributes);
    },
    enabled,
  });
}

/** The list and the server object are stale after any change; the mutation stays pending until both are read again. */
function useInvalidateNetwork(server: string) {
  const client = useQueryClient();
  return () =>
    Promise.all([
      client.invalidateQueries({ queryKey: allocationsKey(server) }),
      client.invalidateQueries({ queryKey: serverKey(server) }),
    ]);
}

/** POST /network/allocations: a free port on the primary's address (400 at the limit or when none is free). */
export function useCreateAllocation(server: string) {
  const invalidate = useInvalidateNetwork(server);
  return useMutation({
    mutationFn: () => post<Item<'allocation', Allocation>>(allocationUrl(server)),
    onSuccess: invalidate,
  });
}

/** POST /network/allocations/{id} `{notes}`: empty clears them. */
export function useSetAllocationNotes(server: string) {
  const invalidate = useInvalidateNetwork(server);
  return useMutation({
    mutationFn: (input: { id: number; notes: string }) => post(allocationUrl(server, input.id), { notes: input.notes }),
    onSuccess: invalidate,
  });
}

/** POST /network/allocations/{id}/primary: SERVER_IP and SERVER_PORT from the next start. */
export function useMakeAllocationPrimary(server: string) {
  const invalidate = useInvalidateNetwork(server);
  return useMutation({
    mutationFn: (id: number) => post(allocationUrl(server, id, '/primary')),
    onSuccess: invalidate,
  });
}

/** DELETE /network/allocations/{id}: never the primary (400). */
export function useRemoveAllocation(server: string) {
  const invalidate = useInvalidateNetwork(server);
  return useMutation({
    mutationFn: (id: number) => del(allocationUrl(server, id)),
    onSuccess: invalidate,
  });
}
