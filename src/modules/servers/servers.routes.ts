import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { AppDeps } from '../../deps.js';
import { clientRoute } from '../../http/routes.js';
import { list, pagination } from '../../http/envelopes.js';
import { parsePageQuery } from '../../http/query.js';
import { visibleServersQuery } from './servers.repository.js';
import { serverItem } from './servers.transformer.js';
import { item } from '../../http/envelopes.js';
import { daemonServer } from './servers.service.js';
import { CommandBody, PowerBody, type CommandInput, type PowerInput } from './power.schemas.js';
import { sendConsoleCommand, sendPowerSignal } from './power.service.js';

export function registerServerRoutes(app: FastifyInstance, deps: AppDeps) {
  clientRoute(app, {
    method: 'GET',
    url: '',
    summary: 'List the servers the caller can see',
    serverScoped: false,
    querystring: Type.Object({ page: Type.Optional(Type.String()), per_page: Type.Optional(Type.String()) }),
    handler: async (request) => {
      const { page, perPage } = parsePageQuery(request.query, { defaultPerPage: 50, maxPerPage: 100 });
      const user = request.auth.user;
      const base = visibleServersQuery(deps.db, user);
      const { total } = await base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
      const rows = await base.selectAll('servers').orderBy('servers.id').limit(perPage).offset((page - 1) * perPage).execute();
      return {
        ...list(rows.map((row) => serverItem(row, user))),
        meta: {
          pagination: pagination({
            total: Number(total),
            count: rows.length,
            perPage,
            page,
            baseUrl: deps.config.appUrl,
            path: request.url.split('?')[0]!,
            rawQuery: request.url.split('?')[1] ?? '',
          }),
        },
      };
    },
  });

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server',
    summary: 'Show one server',
    allowedWhenSuspended: true,
    handler: async (request) => serverItem(request.target.server, request.auth.user),
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
      await sendPowerSignal(deps, server, access, request.auth.actor, (request.body as PowerInput).signal);
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
      await sendConsoleCommand(deps, request.target.server, request.auth.actor, (request.body as CommandInput).command);
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/resources',
    summary: "The server's process state",
    handler: async (request) => {
      const { server } = request.target;
      const state = await deps.daemon.state(daemonServer(server));
      return item('stats', {
        current_state: state,
        is_suspended: server.status === 'suspended',
        resources: { memory_bytes: 0, cpu_absolute: 0, disk_bytes: 0, network_rx_bytes: 0, network_tx_bytes: 0, uptime: 0 },
      });
    },
  });
}
