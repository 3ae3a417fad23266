import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods, RouteOptions } from 'fastify';
import type { TSchema } from '@sinclair/typebox';
import type { ClientRouteConfig } from './client-guard.js';
import { badRequest, ValidationError } from './errors.js';
import { dropUnsetMembers } from './validation.js';

export const CLIENT_PREFIX = '/api/client';

interface ClientRouteOptions extends Partial<ClientRouteConfig> {
  method: HTTPMethods | HTTPMethods[];
  /** Path below /api/client. */
  url: string;
  summary: string;
  body?: TSchema;
  querystring?: TSchema;
  /** Routes outside /servers/{server} (e.g. GET /api/client) authenticate but address no server. */
  serverScoped?: boolean;
  handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

/**
 * Declares one client API route: its schema (which drives validation and the
 * OpenAPI document), its permission and server-status policy, and its handler.
 */
export function clientRoute(app: FastifyInstance, options: ClientRouteOptions) {
  const serverScoped = options.serverScoped ?? true;
  const route: RouteOptions = {
    method: options.method,
    url: CLIENT_PREFIX + options.url,
    schema: {
      summary: options.summary,
      ...(options.body ? { body: options.body } : {}),
      ...(options.querystring ? { querystring: options.querystring } : {}),
      security: [{ bearer: [] }],
    },
    config: {
      authenticated: true,
      ...(serverScoped
        ? {
            client: {
              permission: options.permission ?? null,
              ...(options.permissionAnyOf ? { permissionAnyOf: options.permissionAnyOf } : {}),
              mutates: options.mutates ?? false,
              blockedDuringRestore: options.blockedDuringRestore ?? false,
              allowedWhenSuspended: options.allowedWhenSuspended ?? false,
            },
          }
        : {}),
    },
    handler: options.handler,
  };
  if (options.body) route.preValidation = normaliseBody;
  app.route(route);
}

/** Runs after the guard and before schema validation (SPEC 1.2's order). */
async function normaliseBody(request: FastifyRequest) {
  const body = request.body;
  if (body === undefined) {
    request.body = {};
    return;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest('The request body must be a JSON object.');
  }
  for (const [key, value] of Object.entries(body)) {
    if (typeof value === 'string' && value.includes('\u0000')) {
      throw ValidationError.of(key, 'regex', `The ${key.replace(/_/g, ' ')} field must not contain NUL characters.`);
    }
  }
  request.body = dropUnsetMembers(body);
}
