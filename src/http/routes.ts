import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HTTPMethods,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { TSchema } from '@sinclair/typebox';
import type { AllocationRow, BackupRow, ScheduleRow, TaskRow } from '../db/schema.js';
import type { ClientRouteConfig } from './client-guard.js';
import type { ServerTarget } from './client-resolver.js';
import { badRequest, ValidationError } from './errors.js';
import { dropUnsetMembers } from './validation.js';

export const CLIENT_PREFIX = '/api/client';

type Named<Url extends string, Id extends string, Row> = Url extends `${string}/:${Id}${'' | `/${string}`}`
  ? { [K in Id]: Row }
  : unknown;

/**
 * The target a route's handler gets, read off its path: under /servers/:server
 * a ServerTarget, and every row the path names (`:schedule`, `:task`,
 * `:backup`, `:allocation`) present, since the guard answered 404 otherwise. Routes outside
 * /servers/:server (e.g. GET /api/client) address no server.
 */
type TargetOf<Url extends string> = Url extends `/servers/:server${string}`
  ? ServerTarget &
      Named<Url, 'schedule', ScheduleRow> &
      Named<Url, 'task', TaskRow> &
      Named<Url, 'backup', BackupRow> &
      Named<Url, 'allocation', AllocationRow>
  : null;

/** The schemas of a route, which type its request: body, query string and path parameters. */
interface RouteSchemas<Body extends TSchema | undefined, Query extends TSchema | undefined, Params extends TSchema | undefined> {
  body: Body;
  querystring: Query;
  params: Params;
}

/** A client route's request: typed by its schemas through the TypeBox type provider, and with its path's target. */
type ClientRequest<
  Url extends string,
  Body extends TSchema | undefined = undefined,
  Query extends TSchema | undefined = undefined,
  Params extends TSchema | undefined = undefined,
> = Omit<
  FastifyRequest<
    RouteGenericInterface,
    RawServerDefault,
    RawRequestDefaultExpression,
    RouteSchemas<Body, Query, Params>,
    TypeBoxTypeProvider
  >,
  'target'
> & { target: TargetOf<Url> };

interface ClientRouteOptions<
  Url extends string,
  Body extends TSchema | undefined,
  Query extends TSchema | undefined,
  Params extends TSchema | undefined,
> extends Partial<ClientRouteConfig> {
  method: HTTPMethods | HTTPMethods[];
  /** Path below /api/client; routes under /servers/:server address a server (and its guard runs). */
  url: Url;
  summary: string;
  body?: Body;
  querystring?: Query;
  /** Rarely needed: the guard has already turned every id in the path into its row. */
  params?: Params;
  handler: (request: ClientRequest<Url, Body, Query, Params>, reply: FastifyReply) => Promise<unknown>;
}

/**
 * Declares one client API route: its schema (which drives validation, the
 * request's types and the OpenAPI document), its permission and server-status
 * policy, and its handler.
 */
export function clientRoute<
  Url extends string,
  Body extends TSchema | undefined = undefined,
  Query extends TSchema | undefined = undefined,
  Params extends TSchema | undefined = undefined,
>(app: FastifyInstance, options: ClientRouteOptions<Url, Body, Query, Params>): void {
  const serverScoped = options.url.startsWith('/servers/:server');
  const handler = options.handler;
  app.withTypeProvider<TypeBoxTypeProvider>().route({
    method: options.method,
    url: CLIENT_PREFIX + options.url,
    schema: {
      summary: options.summary,
      ...(options.body ? { body: options.body } : {}),
      ...(options.querystring ? { querystring: options.querystring } : {}),
      ...(options.params ? { params: options.params } : {}),
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
    ...(options.body ? { preValidation: normaliseBody } : {}),
    // The one place the guard's promise is taken at its word: it resolved every row the path
    // names (or answered 404), and validation gave the body and query their schemas' shapes.
    handler: (request, reply) => handler(request as unknown as ClientRequest<Url, Body, Query, Params>, reply),
  });
}

/** Runs after the guard and before schema validation (docs/reference/api.md#errors's order); also used by the sign-in routes. */
export async function normaliseBody(request: FastifyRequest) {
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
