import type { Server, User } from '../api/types';

/**
 * What the signed-in user may do on a server, for enabling controls (the API
 * decides in the end, and its 403 is shown). In order: the server object's
 * `meta.user_permissions` (Pterodactyl's), everything for the owner and root
 * admins, else the `permissions` claim of the server's websocket token, else
 * nothing known, so every guarded control stays disabled.
 */
export interface Permissions {
  can(permission: string): boolean;
  /** False while nothing says what this user may do. */
  known: boolean;
}

export function permissionsFor(server: Server | undefined, user: User, fromSocket: string[] | null): Permissions {
  const owner = server?.attributes.server_owner === true || server?.meta?.is_server_owner === true;
  if (owner || user.admin === true || user.root_admin === true) return { can: () => true, known: true };
  const listed = server?.meta?.user_permissions ?? fromSocket;
  if (!listed) return { can: () => false, known: false };
  const set = new Set(listed);
  return { can: (permission) => set.has('*') || set.has(permission) || set.has(`${permission.split('.')[0]}.*`), known: true };
}
