import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.js';
import { clientRoute } from '../../http/routes.js';
import { ActivityListQuerySchema } from './activity.schemas.js';
import { createActivityService } from './activity.service.js';

const JSON_TYPE = 'application/json; charset=utf-8';

export function registerActivityRoutes(app: FastifyInstance, deps: AppDeps) {
  const activity = createActivityService(deps);
  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/activity',
    summary: "List a server's activity log, newest first (docs/reference/activity.md#listing)",
    permission: 'activity.read',
    querystring: ActivityListQuerySchema,
    handler: (request, reply) => {
      // The service answers with JSON text (rendered or cached), sent as is; an error's body replaces the type.
      reply.type(JSON_TYPE);
      return activity.listActivity(request.target, request.auth.user.id, request.query, request.url);
    },
  });
}
