import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppDeps } from '../../deps.js';
import { list, pagination } from '../../http/envelopes.js';
import { clientRoute } from '../../http/routes.js';
import { findListingVersion } from './activity.repository.js';
import { ListingCache } from './activity.listing-cache.js';
import { ActivityListQuerySchema, parseActivityQuery } from './activity.schemas.js';
import { listActivity, type ActivityListQuery, type ActivityViewer } from './activity.service.js';
import { activityItem } from './activity.transformer.js';

const JSON_TYPE = 'application/json; charset=utf-8';

export function registerActivityRoutes(app: FastifyInstance, deps: AppDeps) {
  const cache = new ListingCache(deps.config.activityCacheMb * 1024 * 1024);
  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/activity',
    summary: "List a server's activity log, newest first (SPEC 3)",
    permission: 'activity.read',
    querystring: ActivityListQuerySchema,
    handler: async (request, reply) => {
      const query = parseActivityQuery(request.query);
      const viewer: ActivityViewer = { userId: request.auth.user.id, seesAllIps: request.target.access.isOwnerOrAdmin };
      const serverId = request.target.server.id;
      // Read before rendering: a write in between leaves a stored listing newer than its version
      // (the next request renders again), never older.
      const version = cache.enabled ? await findListingVersion(deps.db, serverId) : undefined;
      // Owners and root admins see the same listing; a subuser sees only their own entries' IPs.
      const key = `${serverId} ${viewer.seesAllIps ? '*' : viewer.userId} ${request.url}`;
      let body = version === undefined ? undefined : cache.get(key, version);
      if (body === undefined) {
        body = JSON.stringify(await renderListing(deps, request, serverId, viewer, query));
        if (version !== undefined) cache.set(key, version, body);
      }
      return reply.type(JSON_TYPE).send(body);
    },
  });
}

async function renderListing(
  deps: AppDeps,
  request: FastifyRequest,
  serverId: number,
  viewer: ActivityViewer,
  query: ActivityListQuery,
) {
  const { rows, total } = await listActivity(deps, serverId, viewer, query);
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
}
