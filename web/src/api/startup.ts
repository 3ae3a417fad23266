/**
 * Every HTTP call of the Startup and Settings sections (docs/reference/eggs-and-installs.md), each with its
 * TanStack Query hook and the cache it invalidates, in one place. A
 * mutation's error is the API's own `errors[0].detail` (ApiError), shown
 * beside the control that caused it.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { get, post, put } from './client';
import { serverKey } from './servers';
import type { Item, List } from './types';

/** Pterodactyl's `egg_variable`. */
export interface EggVariable {
  name: string;
  description: string;
  env_variable: string;
  default_value: string;
  server_value: string | null;
  is_editable: boolean;
  rules: string;
}

export interface StartupMeta {
  startup_command: string;
  raw_startup_command: string;
  /** Display name → image. */
  docker_images: Record<string, string>;
}

type StartupList = List<Item<'egg_variable', EggVariable>> & { meta: StartupMeta };

const serverUrl = (server: string, tail: string) => `/api/client/servers/${encodeURIComponent(server)}/${tail}`;
const startupKey = (server: string) => ['startup', server] as const;

export function useStartup(server: string, enabled = true) {
  return useQuery({
    queryKey: startupKey(server),
    queryFn: async ({ signal }) => {
      const list = await get<StartupList>(serverUrl(server, 'startup'), signal);
      return { variables: list.data.map((item) => item.attributes), meta: list.meta };
    },
    enabled,
  });
}

/** PUT /startup/variable: the startup list and the server object (its `invocation`) are stale after it. */
export function useSetVariable(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (input: { key: string; value: string }) => put(serverUrl(server, 'startup/variable'), input),
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: startupKey(server) }),
        client.invalidateQueries({ queryKey: serverKey(server) }),
      ]),
  });
}

export function useSetDockerImage(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (image: string) => put(serverUrl(server, 'settings/docker-image'), { docker_image: image }),
    onSuccess: () => client.invalidateQueries({ queryKey: serverKey(server) }),
  });
}

export function useRenameServer(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (input: { name: string; description: string }) => post(serverUrl(server, 'settings/rename'), input),
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: serverKey(server) }),
        client.invalidateQueries({ queryKey: ['servers'] }),
      ]),
  });
}

/** POST /settings/reinstall (the installs module's route): 202, the server installs again. */
export function useReinstallServer(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => post(serverUrl(server, 'settings/reinstall')),
    onSuccess: () => client.invalidateQueries({ queryKey: serverKey(server) }),
  });
}
