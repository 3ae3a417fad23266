/**
 * The one access policy (docs/reference/api.md#errors, docs/reference/authentication.md, docs/reference/servers.md#status, docs/reference/files-and-sftp.md): may this user do this action on
 * this server, now? HTTP routes (through the client guard's resolver),
 * websocket actions, SFTP sessions and signed URLs all ask it, so that a rule
 * is written once. It answers allow, or a refusal in the order Pterodactyl
 * checks: not visible (404), permission missing (403), status (409), with
 * Pterodactyl's sentences.
 */
import type { Queryable } from '../../db/database.js';
import type { ServerRow, UserRow } from '../../db/schema.js';
import { can, type Access, type AccessRefusal, type Permission, type ServerAction } from '../../http/permissions.js';
import { findServerForUser } from './servers.repository.js';

const SUSPENDED_MESSAGE = 'This server is currently suspended and the functionality requested is unavailable.';
const INSTALLING_MESSAGE = 'This server has not yet completed its installation process, please try again later.';
const RESTORING_MESSAGE = 'This server is currently restoring a backup, please try again later.';

/** Who is asking: enough of the user to weigh ownership and root admin. */
export type PolicyUser = Pick<UserRow, 'id' | 'root_admin'>;

/**
 * The user's rights on the server as stored (docs/reference/authentication.md): everything for root
 * admins and the owner, the subuser's list otherwise; null when the user
 * cannot see the server at all.
 */
export function accessOf(
  user: PolicyUser,
  server: Pick<ServerRow, 'owner_id'>,
  subuserPermissions: string | null,
): Access | null {
  if (user.root_admin === 1 || server.owner_id === user.id) return { isOwnerOrAdmin: true, permissions: new Set() };
  if (subuserPermissions === null) return null;
  return { isOwnerOrAdmin: false, permissions: new Set(JSON.parse(subuserPermissions) as string[]) };
}

/**
 * The verdict on one action, once the server is known to be visible: null to
 * allow, or the refusal. `holds` decides a single permission (the websocket
 * narrows it by its token); by default the access's own.
 */
export function refusalOf(
  access: Access | null,
  server: Pick<ServerRow, 'status'>,
  action: ServerAction,
  holds: (permission: Permission) => boolean = (permission) => access !== null && can(access, permission),
): AccessRefusal | null {
  if (access === null) return { kind: 'not-found' };
  if (action.permission && !holds(action.permission)) return { kind: 'forbidden', message: null };
  if (action.permissionAnyOf && !action.permissionAnyOf.some(holds)) return { kind: 'forbidden', message: null };
  return statusRefusal(server, action);
}

/** The 409 a server's status gives this action, if any. */
function statusRefusal(server: Pick<ServerRow, 'status'>, action: ServerAction): AccessRefusal | null {
  switch (server.status) {
    case null:
      return null;
    case 'suspended':
      return action.allowedWhenSuspended ? null : { kind: 'conflict', status: 'suspended', message: SUSPENDED_MESSAGE };
    case 'installing':
    case 'install_failed':
      return action.mutates ? { kind: 'conflict', status: 'installing', message: INSTALLING_MESSAGE } : null;
    case 'restoring_backup':
      return action.blockedDuringRestore ? { kind: 'conflict', status: 'restoring', message: RESTORING_MESSAGE } : null;
  }
}

/** A server as one user sees it: the row and the user's rights on it. */
export interface ServerAccess {
  server: ServerRow;
  access: Access;
}

/**
 * The server a reference names (full UUID or 8-character identifier) and
 * `user`'s rights on it, read in one statement; null when it does not exist
 * or the user cannot see it (a 404, never a 403).
 */
export async function findServerAccess(db: Queryable, user: PolicyUser, reference: string): Promise<ServerAccess | null> {
  const found = await findServerForUser(db, reference, user.id);
  if (!found) return null;
  const access = accessOf(user, found.server, found.subuserPermissions);
  return access ? { server: found.server, access } : null;
}

/**
 * The whole question for callers outside HTTP (SFTP, signed URLs): the
 * server and the user's rights if `action` is allowed now, else the refusal.
 */
export async function decideServerAction(
  db: Queryable,
  user: PolicyUser,
  reference: string,
  action: ServerAction,
): Promise<{ ok: true; target: ServerAccess } | { ok: false; refusal: AccessRefusal }> {
  const target = await findServerAccess(db, user, reference);
  if (!target) return { ok: false, refusal: { kind: 'not-found' } };
  const refusal = refusalOf(target.access, target.server, action);
  return refusal ? { ok: false, refusal } : { ok: true, target };
}
