import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Database } from '../db/database.js';
import type { ApiKeyRow, BackupRow, ScheduleRow, ServerRow, TaskRow, UserRow } from '../db/schema.js';
import type { Clock } from '../clock.js';
import { conflict, forbidden, notFound, tooManyRequests, unauthenticated } from './errors.js';
import { can, type Access, type Permission } from './permissions.js';
import { RateLimiter } from './rate-limit.js';
import { findKeyWithUser, ipAllowed, secretMatches, splitToken } from '../modules/keys/keys.service.js';
import { findServerForUser } from '../modules/servers/servers.repository.js';
import type { Actor } from '../modules/activity/activity.recorder.js';

/**
 * How a client route is guarded. The checks run in SPEC 1.2's order, before the
 * body is even parsed: authentication (401), visibility of the server and of
 * every addressed id (404), permission (403), server status (409). Body and
 * query validation (400/422) come after, in the route.
 */
export interface ClientRouteConfig {
  /** null: anyone who can see the server. */
  permission: Permission | null;
  /** At least one of these (the exact one depends on the body, checked in the handler). */
  permissionAnyOf?: readonly Permission[];
  /** Changes something: refused while the server installs or failed to install. */
  mutates: boolean;
  /** Also refused while a backup is being restored (SPEC 6). */
  blockedDuringRestore?: boolean;
  /** Served for a suspended server (only GET /servers/{server}). */
  allowedWhenSuspended?: boolean;
}

export interface Authenticated {
  user: UserRow;
  key: ApiKeyRow;
  actor: Actor;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set on every /api/client route: authenticate (and rate limit) the caller. */
    authenticated?: boolean;
    /** Set on routes under /servers/{server}. */
    client?: ClientRouteConfig;
  }
  interface FastifyRequest {
    auth: Authenticated;
    target: ServerTarget;
  }
}

/** The server a request addresses, the caller's rights on it, and the rows its path names. */
export interface ServerTarget {
  server: ServerRow;
  access: Access;
  schedule?: ScheduleRow;
  task?: TaskRow;
  backup?: BackupRow;
}

const LAST_USED_RESOLUTION_MS = 60_000;

export function registerClientGuard(app: FastifyInstance, deps: { db: Database; clock: Clock; rateLimitPerMinute: number }) {
  const limiter = new RateLimiter(deps.rateLimitPerMinute, () => deps.clock.now());
  app.decorateRequest('auth', null as unknown as Authenticated);
  app.decorateRequest('target', null as unknown as ServerTarget);

  app.addHook('onRequest', async (request, reply) => {
    const config = request.routeOptions.config;
    if (!config.authenticated) return;
    request.auth = await authenticate(deps, request);
    const decision = limiter.take(request.auth.user.id);
    reply.header('X-RateLimit-Limit', decision.limit);
    reply.header('X-RateLimit-Remaining', decision.remaining);
    if (!decision.allowed) {
      reply.header('Retry-After', decision.retryAfterSeconds);
      throw tooManyRequests();
    }
    if (config.client) request.target = await resolveTarget(deps.db, request, config.client);
  });
}

async function authenticate(deps: { db: Database; clock: Clock }, request: FastifyRequest): Promise<Authenticated> {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  const parts = match?.[1] ? splitToken(match[1]) : null;
  if (!parts) throw unauthenticated();
  // The key and its owner in one statement.
  const found = await findKeyWithUser(deps.db, parts.identifier);
  if (!found) throw unauthenticated();
  const { key, user } = found;
  if (key.revoked_at !== null || !secretMatches(key, parts.secret)) throw unauthenticated();
  if (!user) throw unauthenticated();
  if (!ipAllowed(JSON.parse(key.allowed_ips) as string[], request.ip)) {
    throw forbidden('This IP address is not allowed to use this API key.');
  }
  const now = deps.clock.now();
  // One write a minute per key, not one per request.
  if (key.last_used_at === null || now - key.last_used_at >= LAST_USED_RESOLUTION_MS) {
    await deps.db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', key.id).execute();
  }
  return { user, key, actor: { userId: user.id, apiKeyId: key.id, ip: request.ip } };
}

const INTEGER_ID = /^[1-9][0-9]{0,9}$/;

async function resolveTarget(db: Database, request: FastifyRequest, config: ClientRouteConfig): Promise<ServerTarget> {
  const params = request.params as Record<string, string | undefined>;
  const { user } = request.auth;
  // The server and the caller's subuser permissions on it in one statement.
  const found = params.server ? await findServerForUser(db, params.server, user.id) : undefined;
  if (!found) throw notFound();
  const { server } = found;
  let access: Access;
  if (user.root_admin === 1 || server.owner_id === user.id) {
    access = { isOwnerOrAdmin: true, permissions: new Set() };
  } else {
    if (found.subuserPermissions === null) throw notFound();
    access = { isOwnerOrAdmin: false, permissions: new Set(JSON.parse(found.subuserPermissions) as string[]) };
  }
  const target: ServerTarget = { server, access };

  // Every id in the path must belong to this server: a foreign one is a 404, never a 403.
  if (params.schedule !== undefined) {
    const id = INTEGER_ID.test(params.schedule) ? Number(params.schedule) : NaN;
    target.schedule = Number.isSafeInteger(id)
      ? await db.selectFrom('schedules').selectAll().where('id', '=', id).where('server_id', '=', server.id).executeTakeFirst()
      : undefined;
    if (!target.schedule) throw notFound();
  }
  if (params.task !== undefined) {
    const id = INTEGER_ID.test(params.task) ? Number(params.task) : NaN;
    target.task =
      Number.isSafeInteger(id) && target.schedule
        ? await db.selectFrom('tasks').selectAll().where('id', '=', id).where('schedule_id', '=', target.schedule.id).executeTakeFirst()
        : undefined;
    if (!target.task) throw notFound();
  }
  if (params.backup !== undefined) {
    target.backup = /^[0-9a-f-]{36}$/i.test(params.backup)
      ? await db
          .selectFrom('backups')
          .selectAll()
          .where('uuid', '=', params.backup.toLowerCase())
          .where('server_id', '=', server.id)
          .executeTakeFirst()
      : undefined;
    if (!target.backup) throw notFound();
  }

  if (config.permission && !can(access, config.permission)) throw forbidden();
  if (config.permissionAnyOf && !config.permissionAnyOf.some((p) => can(access, p))) throw forbidden();

  switch (server.status) {
    case null:
      break;
    case 'suspended':
      if (!config.allowedWhenSuspended) throw conflict('This server is currently suspended and the functionality requested is unavailable.');
      break;
    case 'installing':
    case 'install_failed':
      if (config.mutates) throw conflict('This server has not yet completed its installation process, please try again later.');
      break;
    case 'restoring_backup':
      if (config.blockedDuringRestore) throw conflict('This server is currently restoring a backup, please try again later.');
      break;
  }
  return target;
}
