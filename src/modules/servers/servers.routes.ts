import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.js';
import { clientRoute } from '../../http/routes.js';
import { paginatedList } from '../../http/envelopes.js';
import { Type } from '@sinclair/typebox';
import { PageQuery, parsePageQuery } from '../../http/query.js';
import { serverItem, serverMeta, sftpDetails, statsItem, withIncludes } from './servers.transformer.js';
import {
  eggsOfServers,
  listVisibleServers,
  parseServerListQuery,
  serverResources,
  subusersOfServersShownTo,
} from './servers.service.js';
import { CommandBody, PowerBody } from './power.schemas.js';
import { sendConsoleCommand, sendPowerSignal } from './power.service.js';
import { allocationsOfServerShownTo, allocationsOfServersShownTo } from '../allocations/allocations.service.js';
import { startupOfServersShownTo, startupShownTo } from '../startup/startup.service.js';

/** GET /api/client's query (docs/reference/accounts.md): the page, and Pterodactyl's `type`, `filter[...]`, `sort` and `include`. */
const ServerListQuery = Type.Composite([
  PageQuery,
  Type.Object({
    type: Type.Optional(Type.String()),
    filter: Type.Optional(Type.Unknown()),
    sort: Type.Optional(Type.String()),
    include: Type.Optional(Type.String()),
  }),
]);

export function registerServerRoutes(app: FastifyInstance, deps: AppDeps) {
  const sftp = sftpDetails(deps.config, deps.sftpPort);
  clientRoute(app, {
    method: 'GET',
    url: '',
    summary: 'List the servers the caller can see',
    querystring: ServerListQuery,
    handler: async (request) => {
      const page = parsePageQuery(request.query, { defaultPerPage: 50, maxPerPage: 100 });
      const { user } = request.auth;
      const { criteria, includes } = parseServerListQuery(user, request.query);
      const { rows, total } = await listVisibleServers(deps.db, user, criteria, page);
      const allocations = await allocationsOfServersShownTo(deps.db, user, rows);
      const startup = await startupOfServersShownTo(deps.db, user, rows);
      const eggs = includes.egg ? await eggsOfServers(deps.db, rows) : undefined;
      const subusers = includes.subusers ? await subusersOfServersShownTo(deps.db, user, rows) : undefined;
      const items = rows.map((row) =>
        withIncludes(
          serverItem(row, user, allocations.get(row.id) ?? [], sftp, startup.get(row.id)),
          eggs && (eggs.get(row.id) ?? null),
          subusers && (subusers.get(row.id) ?? null),
        ),
      );
      return paginatedList(items, { total, ...page }, { url: request.url, baseUrl: deps.config.appUrl });
    },
  });

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server',
    summary: 'Show one server',
    allowedWhenSuspended: true,
    handler: async (request) => {
      const { server, access } = request.target;
      const allocations = await allocationsOfServerShownTo(deps.db, access, server);
      const startup = await startupShownTo(deps.db, access, server);
      return {
        ...serverItem(server, request.auth.user, allocations, sftp, startup),
        meta: serverMeta(server, request.auth.user, access),
      };
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/power',
    summary: 'Send a power signal: start, stop, restart or kill',
    permissionAnyOf: ['control.start', 'control.stop', 'control.restart'],
    mutates: true,
    blockedDuringRestore: true,
    body: PowerBody,
    handler: async (request, reply) => {
      const { server, access } = request.target;
      await sendPowerSignal(deps, server, access, request.auth.actor, request.body.signal);
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/command',
    summary: "Write a line to the server's console",
    permission: 'control.console',
    mutates: true,
    blockedDuringRestore: true,
    body: CommandBody,
    handler: async (request, reply) => {
      await sendConsoleCommand(deps, request.target.server, request.auth.actor, request.body.command);
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/resources',
    summary: "The server's state and what it uses: memory, CPU, disk, network, uptime",
    handler: async (request) => statsItem(request.target.server, await serverResources(deps, request.target.server)),
  });
}
