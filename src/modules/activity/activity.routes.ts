import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../app.js';
import { list, pagination } from '../../http/envelopes.js';
import { clientRoute } from '../../http/routes.js';
import { ActivityListQuerySchema, parseActivityQuery } from './activity.schemas.js';
import { listActivity, type ActivityViewer } from './activity.service.js';
import { activityItem } from './activity.transformer.js';

export function registerActivityRoutes(app: FastifyInstance, deps: AppDeps) {
  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/activity',
    summary: "List a server's activity log, newest first (SPEC 3)",
    permission: 'activity.read',
    querystring: ActivityListQuerySchema,
    handler: async (request) => {
      const query = parseActivityQuery(request.query);
      const viewer: ActivityViewer = { userId: request.auth.user.id, seesAllIps: request.target.access.isOwnerOrAdmin };
      const { rows, total } = await listActivity(deps, request.target.server.id, viewer, query);
      const [path, rawQuery = ''] = request.url.split('?');
      return {
        ...list(rows.map((row) => activityItem(row, viewer))),
        meta: {
          pagination: pagination({
            total,
            count: rows.length,
            perPage: query.perPage,
            page: query.page,
            baseUrl: deps.config.appUrl,
            path: path!,
            rawQuery,
          }),
        },
      };
    },
  });
}
