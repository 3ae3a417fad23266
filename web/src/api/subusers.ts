/**
 * Every HTTP call of the Users section (docs/SUBUSERS.md, Pterodactyl's
 * SubuserController): the server's subusers, the permission catalogue the
 * picker is built from, and adding, changing and removing a subuser, each
 * with its TanStack Query hook and the cache it invalidates. A mutation's
 * error is the API's own `errors[0].detail` (ApiError), shown beside the
 * control that caused it.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { del, get, post } from './client';
import { serverUrl } from './servers';
import type { Item, List } from './types';

/** Pterodactyl's `server_subuser`: the account's fields and what it may do on this server. */
export interface Subuser {
  uuid: string;
  username: string;
  email: string;
  image: string;
  '2fa_enabled': boolean;
  created_at: string;
  permissions: string[];
}

/** One group of GET /api/client/permissions: what it covers, and each key (without the group) with what it allows. */
export interface PermissionGroup {
  description: string;
  keys: Record<string, string>;
}

/** Group name → group, in the API's order (Pterodactyl's `system_permissions`). */
export type PermissionCatalogue = Record<string, PermissionGroup>;

/** Every subuser holds it: the API adds it to whatever is granted (docs/SUBUSERS.md). */
export const IMPLICIT_PERMISSION = 'websocket.connect';

const subusersKey = (server: string) => ['subusers', server] as const;
const catalogueKey = ['permission-catalogue'] as const;

/** GET /users: Pterodactyl's list is not paginated, and neither is this one. */
export function useSubusers(server: string, enabled = true) {
  return useQuery({
    queryKey: subusersKey(server),
    queryFn: async ({ signal }) => {
      const list = await get<List<Item<'server_subuser', Subuser>>>(serverUrl(server, 'users'), signal);
      return list.data.map((item) => item.attributes);
    },
    enabled,
  });
}

/** GET /api/client/permissions: the same for every server and every caller, so read once per page load. */
export function usePermissionCatalogue(enabled = true) {
  return useQuery({
    queryKey: catalogueKey,
    queryFn: async ({ signal }) => {
      const body = await get<Item<'system_permissions', { permissions: PermissionCatalogue }>>('/api/client/permissions', signal);
      return body.attributes.permissions;
    },
    staleTime: Infinity,
    enabled,
  });
}

/** What a subuser's change depends on afterwards: the list, and the server's activity log (each change is logged). */
function useInvalidateSubusers(server: string) {
  const client = useQueryClient();
  return () =>
    Promise.all([
      client.invalidateQueries({ queryKey: subusersKey(server) }),
      client.invalidateQueries({ queryKey: ['activity', server] }),
    ]);
}

/** POST /users: an unknown email gets an account without a password (it cannot sign in until an admin sets one). */
export function useAddSubuser(server: string) {
  const invalidate = useInvalidateSubusers(server);
  return useMutation({
    mutationFn: (input: { email: string; permissions: string[] }) =>
      post<Item<'server_subuser', Subuser>>(serverUrl(server, 'users'), input),
    onSuccess: invalidate,
  });
}

/** POST /users/{uuid}: replaces the subuser's permissions. */
export function useUpdateSubuser(server: string) {
  const invalidate = useInvalidateSubusers(server);
  return useMutation({
    mutationFn: (input: { uuid: string; permissions: string[] }) =>
      post<Item<'server_subuser', Subuser>>(serverUrl(server, `users/${encodeURIComponent(input.uuid)}`), {
        permissions: input.permissions,
      }),
    onSuccess: invalidate,
  });
}

/** DELETE /users/{uuid}: the subuser loses the server. */
export function useRemoveSubuser(server: string) {
  const invalidate = useInvalidateSubusers(server);
  return useMutation({
    mutationFn: (uuid: string) => del(serverUrl(server, `users/${encodeURIComponent(uuid)}`)),
    onSuccess: invalidate,
  });
}
