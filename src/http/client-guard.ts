import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import type { Authenticated, ClientResolver, PathIds, ServerTarget } from './client-resolver.js';
import { csrfTokenMatches, MUTATING_METHODS, readCookie, SESSION_COOKIE, XSRF_HEADER } from './cookies.js';
import { conflict, forbidden, notFound, tooManyRequests, unauthenticated, type HttpError } from './errors.js';
import type { AccessRefusal, ServerAction } from './permissions.js';
import { RateLimiter } from './rate-limit.js';

/**
 * How a client route is guarded. The checks run in docs/reference/api.md#errors's order, before the
 * body is even parsed: authentication (401), visibility of the server and of
 * every addressed id (404), permission (403), server status (409). Body and
 * query validation (400/422) come after, in the route.
 */
export type ClientRouteConfig = ServerAction;

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
    if (server === undefined) throw notFound();
    // The one access policy (modules/servers/access-policy.ts) decides; the guard only speaks HTTP.
    const verdict = await resolver.findServerTarget(
      request.auth.user,
      { server, schedule, task, backup, allocation },
      config.client,
    );
    if (!verdict.ok) throw refusalError(verdict.refusal);
    request.target = verdict.target;
  });
}

/**
 * A signed-in browser (docs/reference/web-console.md): the session cookie's user, as a key's would
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

/** The policy's refusal in docs/reference/api.md#errors's shape: 404, 403 or 409 with Pterodactyl's sentence. */
export function refusalError(refusal: AccessRefusal): HttpError {
  switch (refusal.kind) {
    case 'not-found':
      return notFound();
    case 'forbidden':
      return forbidden();
    case 'conflict':
      return conflict(refusal.message);
  }
}
