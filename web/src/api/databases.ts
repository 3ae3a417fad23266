/**
 * Every HTTP call of the Databases section (docs/DATABASES.md): the server's
 * databases on the admin's database hosts, each change with its TanStack
 * Query hook. Passwords are read only while someone looks at them (the
 * details dialog asks for `include=password`), and are dropped from the cache
 * once it closes.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { del, get, post } from './client';
import { serverUrl } from './servers';
import type { Item, List } from './types';

/** Pterodactyl's `server_database`; `relationships` only with `include=password`. */
export interface ServerDatabase {
  id: string;
  host: { address: string; port: number };
  name: string;
  username: string;
  connections_from: string;
  max_connections: number;
  relationships?: {
    /** Fractal's null resource (attributes null) for who lacks `database.view_password`. */
    password: { object: string; attributes: { password: string } | null };
  };
}

type DatabaseList = List<Item<'server_database', ServerDatabase>>;

const databasesKey = (server: string) => ['databases', server] as const;
const listKey = (server: string) => [...databasesKey(server), 'list'] as const;
const passwordsKey = (server: string) => [...databasesKey(server), 'passwords'] as const;
const databasesUrl = (server: string, tail = '') => serverUrl(server, `databases${tail}`);

/** `host:port`, where clients connect. */
export const endpointOf = (database: ServerDatabase) => `${database.host.address}:${database.host.port}`;

/** The password in an item read with `include=password`; null when it was not sent or may not be seen. */
export const passwordOf = (database: ServerDatabase | undefined) =>
  database?.relationships?.password.attributes?.password ?? null;

/** Pterodactyl's JDBC-style string: `jdbc:mysql://user:password@host:port/name` (the password URL-encoded, left out when unknown). */
export function connectionStringOf(database: ServerDatabase, password: string | null): string {
  const credentials = password === null ? database.username : `${database.username}:${encodeURIComponent(password)}`;
  return `jdbc:mysql://${credentials}@${endpointOf(database)}/${database.name}`;
}

export function useDatabases(server: string, enabled = true) {
  return useQuery({
    queryKey: listKey(server),
    queryFn: async ({ signal }) => (await get<DatabaseList>(databasesUrl(server), signal)).data.map((item) => item.attributes),
    enabled,
  });
}

/** The list with `include=password`, while the details dialog is open; nothing of it stays cached after. */
export function useDatabasePasswords(server: string, enabled: boolean) {
  return useQuery({
    queryKey: passwordsKey(server),
    queryFn: async ({ signal }) =>
      (await get<DatabaseList>(databasesUrl(server, '?include=password'), signal)).data.map((item) => item.attributes),
    enabled,
    gcTime: 0,
    staleTime: 0,
  });
}

function useInvalidateDatabases(server: string) {
  const client = useQueryClient();
  return () => client.invalidateQueries({ queryKey: databasesKey(server) });
}

/** POST /databases `{database, remote}`: 400 past the server's limit, 422 for a name it already has. */
export function useCreateDatabase(server: string) {
  const invalidate = useInvalidateDatabases(server);
  return useMutation({
    mutationFn: (input: { database: string; remote: string }) =>
      post<Item<'server_database', ServerDatabase>>(databasesUrl(server), input),
    onSuccess: invalidate,
  });
}

/** POST /databases/{id}/rotate-password: the user gets a new random password on the host. */
export function useRotateDatabasePassword(server: string) {
  const invalidate = useInvalidateDatabases(server);
  return useMutation({
    mutationFn: (id: string) =>
      post<Item<'server_database', ServerDatabase>>(databasesUrl(server, `/${encodeURIComponent(id)}/rotate-password`)),
    onSuccess: invalidate,
  });
}

/** DELETE /databases/{id}: the database and its user are dropped on the host. */
export function useDeleteDatabase(server: string) {
  const invalidate = useInvalidateDatabases(server);
  return useMutation({
    mutationFn: (id: string) => del(databasesUrl(server, `/${encodeURIComponent(id)}`)),
    onSuccess: invalidate,
  });
}
