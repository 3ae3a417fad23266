import type { ServerRow } from '../../db/schema.js';
import type { AppDeps } from '../../deps.js';
import { list, pagination } from '../../http/envelopes.js';
import type { Access } from '../../http/permissions.js';
import { ListingCache } from './activity.listing-cache.js';
import { findListingVersion } from './activity.repository.js';
import { parseActivityQuery } from './activity.schemas.js';
import { activityItem } from './activity.transformer.js';
import type { ActivityListQuery, ActivityViewer } from './activity.types.js';
import { findPage } from './index-engine/find-page.js';

type Deps = Pick<AppDeps, 'db' | 'dialect' | 'config'>;

/** The server a request addresses and the caller's rights on it, as the route's guard found them. */
export interface ListingTarget {
  server: Pick<ServerRow, 'id'>;
  access: Access;
}

export interface ActivityService {
  /**
   * A server's activity listing (docs/reference/activity.md#listing) as the JSON text of the response, for
   * the user `userId`. `rawQuery`: the parsed query string; `url`: the
   * request's, which names the listing in the cache and in the pagination links.
   */
  listActivity(target: ListingTarget, userId: number, rawQuery: Readonly<Record<string, unknown>>, url: string): Promise<string>;
}

/**
 * The listing use case: the query's checks, the viewer's IP rule, then the
 * rendered-listing cache (activity.listing-cache.ts), and on a miss the index
 * engine's page (index-engine/find-page.ts), transformed. One cache per
 * service, so one per app instance.
 */
export function createActivityService(deps: Deps): ActivityService {
  const cache = new ListingCache(deps.config.activityCacheMb * 1024 * 1024);
  return {
    async listActivity(target, userId, rawQuery, url) {
      const query = parseActivityQuery(rawQuery);
      const serverId = target.server.id;
      const viewer: ActivityViewer = { userId, seesAllIps: target.access.isOwnerOrAdmin };
      // Read before rendering: a write in between leaves a stored listing newer than its version
      // (the next request renders again), never older.
      const version = cache.enabled ? await findListingVersion(deps.db, serverId) : undefined;
      // Owners and root admins see the same listing; a subuser sees only their own entries' IPs.
      const key = `${serverId} ${viewer.seesAllIps ? '*' : viewer.userId} ${url}`;
      let body = version === undefined ? undefined : cache.get(key, version);
      if (body === undefined) {
        body = JSON.stringify(await renderListing(deps, serverId, viewer, query, url));
        if (version !== undefined) cache.set(key, version, body);
      }
      return body;
    },
  };
}

async function renderListing(deps: Deps, serverId: number, viewer: ActivityViewer, query: ActivityListQuery, url: string) {
  const { rows, total } = await findPage(deps, serverId, viewer, query);
  const [path = url, rawQuery = ''] = url.split('?');
  return {
    ...list(rows.map((row) => activityItem(row, viewer))),
    meta: {
      pagination: pagination({
        total,
        count: rows.length,
        perPage: query.perPage,
        page: query.page,
        baseUrl: deps.config.appUrl,
        path,
        rawQuery,
      }),
    },
  };
}
