import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.js';
import { clientRoute } from '../../http/routes.js';
import { UpdateVariableBody } from './startup.schemas.js';
import { readStartup, updateStartupVariable } from './startup.service.js';
import { eggVariableItem, startupList } from './startup.transformer.js';

/** A server's startup command and egg variables (docs/reference/eggs-and-installs.md), Pterodactyl's StartupController. */
export function registerStartupRoutes(app: FastifyInstance, deps: AppDeps) {
  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/startup',
    summary: "The server's startup command, its user-viewable egg variables and the egg's images",
    permission: 'startup.read',
    handler: async (request) => {
      const view = await readStartup(deps.db, request.target.server);
      return startupList(view.variables, view);
    },
  });

  clientRoute(app, {
    method: 'PUT',
    url: '/servers/:server/startup/variable',
    summary: "Set the server's value of one user-editable egg variable (used from the next start)",
    permission: 'startup.update',
    mutates: true,
    body: UpdateVariableBody,
    handler: async (request) => {
      const result = await updateStartupVariable(deps, request.target.server, request.auth.actor, request.body);
      return {
        ...eggVariableItem(result.variable),
        meta: { startup_command: result.startupCommand, raw_startup_command: result.rawStartupCommand },
      };
    },
  });
}
