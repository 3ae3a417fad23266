import type { AddressInfo } from 'node:net';
import type { Actor } from '../../actor.js';
import type { AppDeps } from '../../deps.js';
import type { Queryable } from '../../db/database.js';
import type { ServerRow, UserRow } from '../../db/schema.js';
import { DaemonBusyError, DaemonError, DaemonTimeoutError } from '../../daemon/daemon.js';
import type { ServerTarget } from '../../http/client-resolver.js';
import { HttpError } from '../../http/errors.js';
import {
  PERMISSIONS,
  permissionForSignal,
  type Access,
  type Permission,
  type PowerSignal,
  type ServerAction,
} from '../../http/permissions.js';
import type { ServerEvents } from '../../server-events.js';
import { accessOf, refusalOf } from '../servers/access-policy.js';
import { sendConsoleCommand, sendPowerSignal } from '../servers/power.service.js';
import { findServerByReference } from '../servers/servers.repository.js';
import { findSocketAccess, findSocketUsers, findSubuserPermissions, type SocketUser } from './websocket.repository.js';
import { signWebsocketToken, tokenGrants } from './websocket.tokens.js';

/** What the websocket module needs: the app's dependencies with the key and the event emitter made certain. */
export type WebsocketDeps = Pick<AppDeps, 'db' | 'clock' | 'daemon' | 'jobs' | 'config'> & {
  appKey: Buffer;
  serverEvents: ServerEvents;
};

/**
 * GET /servers/{server}/websocket (docs/reference/power-and-console.md#websocket): a token for this user and
 * server, and where the socket is. `publicUrl` is how clients reach this
 * service (APP_URL).
 */
export async function issueWebsocketToken(
  deps: Pick<WebsocketDeps, 'appKey' | 'clock' | 'config'>,
  target: ServerTarget,
  user: UserRow,
  publicUrl: string,
): Promise<{ token: string; socket: string }> {
  const token = await signWebsocketToken(deps.appKey, {
    issuer: deps.config.appUrl,
    audience: publicUrl,
    serverUuid: target.server.uuid,
    user,
    permissions: tokenPermissions(user, target.server, target.access),
    now: deps.clock.now(),
  });
  return { token, socket: socketUrl(publicUrl, target.server.uuid) };
}

/**
 * What a token says the user may do (Pterodactyl's GetUserPermissionsService):
 * `*` for the owner and root admins (admins also get the `admin.websocket.*`
 * grants), a subuser's own list otherwise.
 */
export function tokenPermissions(
  user: Pick<UserRow, 'id' | 'root_admin'>,
  server: Pick<ServerRow, 'owner_id'>,
  access: Access,
): string[] {
  if (user.root_admin === 1) return ['*', 'admin.websocket.errors', 'admin.websocket.install', 'admin.websocket.transfer'];
  if (server.owner_id === user.id) return ['*'];
  return [...access.permissions];
}

/**
 * How clients reach this service: APP_URL, except that an APP_URL on port 0
 * (PORT=0 with no APP_URL: a free port was picked) gets the port actually bound.
 */
export function publicBaseUrl(appUrl: string, address: AddressInfo | string | null): string {
  const url = new URL(appUrl);
  if (url.port !== '0' || address === null || typeof address === 'string') return appUrl;
  url.port = String(address.port);
  return url.toString().replace(/\/+$/, '');
}

const FULL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The server a socket's path names (by full UUID, as the token route gives it), if it exists. */
export async function findSocketServer(db: Queryable, uuid: string): Promise<ServerRow | undefined> {
  return FULL_UUID.test(uuid) ? findServerByReference(db, uuid) : undefined;
}

/** `ws://` (or `wss://` for an https APP_URL) + APP_URL's host and path + `/api/servers/<uuid>/ws`. */
export function socketUrl(publicUrl: string, serverUuid: string): string {
  const url = new URL(publicUrl);
  const scheme = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${url.host}${url.pathname.replace(/\/+$/, '')}/api/servers/${serverUuid}/ws`;
}

/** A permission holds on a socket when the token grants it and the user still has it: a token never outlives a revocation. */
export function socketMay(tokenPermissions: readonly string[], access: Access, permission: Permission): boolean {
  return tokenGrants(tokenPermissions, permission) && (access.isOwnerOrAdmin || access.permissions.has(permission));
}

export interface SocketAccess {
  server: ServerRow;
  user: SocketUser;
  access: Access;
}

/** Read fresh on every `auth`, command and power action: the server, the user, and what the user may do there. */
export async function findCurrentSocketAccess(db: Queryable, serverUuid: string, userUuid: string): Promise<SocketAccess | null> {
  const found = await findSocketAccess(db, serverUuid, userUuid);
  if (!found) return null;
  const access = accessOf(found.user, found.server, found.subuserPermissions);
  return access ? { server: found.server, user: found.user, access } : null;
}

/**
 * The periodic re-check of every authenticated socket (the hub's, at least
 * once a minute): two statements for all of them. Keyed `serverId:userId`;
 * null where the user is gone or can no longer see the server.
 */
export async function recheckSocketAccess(
  db: Queryable,
  pairs: readonly { server: ServerRow; userId: number }[],
): Promise<Map<string, Access | null>> {
  const userIds = [...new Set(pairs.map((p) => p.userId))];
  const serverIds = [...new Set(pairs.map((p) => p.server.id))];
  const [users, subusers] = await Promise.all([findSocketUsers(db, userIds), findSubuserPermissions(db, serverIds, userIds)]);
  const usersById = new Map(users.map((u) => [u.id, u]));
  const permissions = new Map(subusers.map((s) => [`${s.server_id}:${s.user_id}`, s.permissions]));
  const result = new Map<string, Access | null>();
  for (const { server, userId } of pairs) {
    const key = `${server.id}:${userId}`;
    const user = usersById.get(userId);
    result.set(key, user ? accessOf(user, server, permissions.get(key) ?? null) : null);
  }
  return result;
}

/** Who acts through a socket. */
export interface SocketActor {
  serverUuid: string;
  userUuid: string;
  tokenPermissions: readonly string[];
  ip: string;
}

/**
 * What became of a command or power action sent over a socket: done; the
 * user lost the server or the socket (revoked); the server is suspended; or
 * refused with the message a `daemon error` frame carries.
 */
export type SocketActionOutcome =
  { ok: true } | { ok: false; reason: 'revoked' | 'suspended' } | { ok: false; reason: 'refused'; message: string };

const FORBIDDEN = 'This action is unauthorized.';

/** `send command`: as POST /command (docs/reference/servers.md#the-server-routes), logged `server:console.command` for the user. */
export function socketConsoleCommand(deps: WebsocketDeps, who: SocketActor, command: string): Promise<SocketActionOutcome> {
  return actAs(deps, who, 'control.console', (server, actor) => sendConsoleCommand(deps, server, actor, command));
}

/** `set state`: as POST /power (docs/reference/servers.md#the-server-routes), `kill` needing `control.stop`, logged `server:power.<signal>` for the user. */
export function socketPowerAction(deps: WebsocketDeps, who: SocketActor, signal: string): Promise<SocketActionOutcome> {
  if (!isPowerSignal(signal)) {
    return Promise.resolve({
      ok: false,
      reason: 'refused',
      message: `"${signal}" is not a power action (start, stop, restart or kill).`,
    });
  }
  return actAs(deps, who, permissionForSignal(signal), (server, actor, access) =>
    sendPowerSignal(deps, server, access, actor, signal),
  );
}

function isPowerSignal(value: string): value is PowerSignal {
  return value === 'start' || value === 'stop' || value === 'restart' || value === 'kill';
}

/**
 * The HTTP route's checks, in its order, against what is stored now: the
 * user still sees the server (and may use the socket), holds the permission
 * (the token's, narrowed by their current rights), and the server's status
 * allows a change (docs/reference/servers.md#status: as a route that mutates and is blocked during a
 * restore). The activity entry has the user as actor, no key, the socket's IP.
 */
async function actAs(
  deps: WebsocketDeps,
  who: SocketActor,
  permission: Permission,
  run: (server: ServerRow, actor: Actor, access: Access) => Promise<void>,
): Promise<SocketActionOutcome> {
  const found = await findCurrentSocketAccess(deps.db, who.serverUuid, who.userUuid);
  if (!found || !socketMay(who.tokenPermissions, found.access, 'websocket.connect')) return { ok: false, reason: 'revoked' };
  const holds = (p: Permission) => socketMay(who.tokenPermissions, found.access, p);
  const refusal = refusalOf(found.access, found.server, socketAction(permission), holds);
  if (refusal?.kind === 'forbidden') return { ok: false, reason: 'refused', message: FORBIDDEN };
  if (refusal?.kind === 'conflict' && refusal.status === 'suspended') return { ok: false, reason: 'suspended' };
  if (refusal?.kind === 'conflict') return { ok: false, reason: 'refused', message: refusal.message };
  const actor: Actor = { userId: found.user.id, apiKeyId: null, ip: who.ip };
  const access: Access = {
    isOwnerOrAdmin: false,
    permissions: new Set(PERMISSIONS.filter(holds)),
  };
  try {
    await run(found.server, actor, access);
  } catch (err) {
    const message = refusalMessage(err);
    if (message === null) throw err;
    return { ok: false, reason: 'refused', message };
  }
  return { ok: true };
}

/**
 * Holding a socket open: `websocket.connect`, on a server that is not
 * suspended (it may install or restore: the socket shows that happening).
 */
export const SOCKET_ACCESS: ServerAction = { permission: 'websocket.connect', mutates: false };

/** A socket's command or power action, weighed as the HTTP route that does the same: it changes something and waits out a restore. */
function socketAction(permission: Permission): ServerAction {
  return { permission, mutates: true, blockedDuringRestore: true };
}

/** What a client may be told of a failure: the HTTP error's detail or the daemon's sentence; null for a bug. */
function refusalMessage(err: unknown): string | null {
  if (err instanceof HttpError) return err.detail;
  if (err instanceof DaemonError || err instanceof DaemonBusyError || err instanceof DaemonTimeoutError) return err.message;
  return null;
}
