import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import type { Authenticated, ClientResolver, PathIds, ServerTarget } from './client-resolver.js';
import { csrfTokenMatches, MUTATING_METHODS, readCookie, SESSION_COOKIE, XSRF_HEADER } from './cookies.js';
import { conflict, forbidden, notFound, tooManyRequests, unauthenticated } from './errors.js';
import { can, type Permission } from './permissions.js';
import { RateLimiter } from './rate-limit.js';

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

export function registerClientGuard(
  app: FastifyInstance,
  deps: { resolver: ClientResolver; clock: Clock; rateLimitPerMinute: number },
) {
  const { resolver, clock } = deps;
  const limiter = new RateLimiter(deps.rateLimitPerMinute, () => clock.now());
  app.decorateRequest('auth', null as unknown as Authenticated);
  app.decorateRequest('target', null as unknown as ServerTarget);

  // The router hands every path parameter over as a string; a route may name none of these.
  app.addHook<{ Params: Partial<PathIds> }>('onRequest', async (request, reply) => {
    const config = request.routeOptions.config;
    if (!config.authenticated) return;
    const header = request.headers.authorization;
    if (header === undefined) {
      request.auth = await authenticateBySession(resolver, request, clock.now());
    } else {
      // A bearer token wins over any session cookie the request also carries.
      const token = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined;
      if (token === undefined) throw unauthenticated();
      const authentication = await resolver.authenticate(token, request.ip, clock.now());
      if (!authentication.ok) {
        if (authentication.reason === 'ip-not-allowed') throw forbidden('This IP address is not allowed to use this API key.');
        throw unauthenticated();
      }
      request.auth = authentication.auth;
    }
    const decision = limiter.take(request.auth.user.id);
    reply.header('X-RateLimit-Limit', decision.limit);
    reply.header('X-RateLimit-Remaining', decision.remaining);
    if (!decision.allowed) {
      reply.header('Retry-After', decision.retryAfterSeconds);
      throw tooManyRequests();
    }
    if (!config.client) return;
    const { server, schedule, task, backup, allocation } = request.params;
    const target =
      server === undefined
        ? null
        : await resolver.findServerTarget(request.auth.user, { server, schedule, task, backup, allocation });
    if (!target) throw notFound();
    assertAllowed(target, config.client);
    request.target = target;
  });
}

/**
 * A signed-in browser (SPEC 12): the session cookie's user, as a key's would
 * be. A request that changes something must carry the session's CSRF token in
 * `X-XSRF-TOKEN` or is refused (403) before anything runs: another site can
 * make the browser send the cookie, but cannot read the token.
 */
async function authenticateBySession(resolver: ClientResolver, request: FastifyRequest, now: number): Promise<Authenticated> {
  const token = readCookie(request.headers.cookie, SESSION_COOKIE);
  if (token === undefined) throw unauthenticated();
  const session = await resolver.authenticateSession(token, request.ip, now);
  if (!session) throw unauthenticated();
  if (MUTATING_METHODS.has(request.method) && !csrfTokenMatches(request.headers[XSRF_HEADER], session.csrfToken)) {
    throw forbidden('CSRF token mismatch.');
  }
  return session.auth;
}

/** The permission (403) and server-status (409) checks, once every addressed row is known to be visible. */
function assertAllowed({ access, server }: ServerTarget, config: ClientRouteConfig): void {
  if (config.permission && !can(access, config.permission)) throw forbidden();
  if (config.permissionAnyOf && !config.permissionAnyOf.some((p) => can(access, p))) throw forbidden();

  switch (server.status) {
    case null:
      break;
    case 'suspended':
      if (!config.allowedWhenSuspended)
        throw conflict('This server is currently suspended and the functionality requested is unavailable.');
      break;
    case 'installing':
    case 'install_failed':
      if (config.mutates) throw conflict('This server has not yet completed its installation process, please try again later.');
      break;
    case 'restoring_backup':
      if (config.blockedDuringRestore) throw conflict('This server is currently restoring a backup, please try again later.');
      break;
  }
}
