import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.js';
import { clientRoute } from '../../http/routes.js';
import { DockerImageBody, RenameServerBody } from './settings.schemas.js';
import { renameServer, setDockerImage } from './settings.service.js';

/**
 * A server's settings (docs/reference/eggs-and-installs.md), Pterodactyl's SettingsController: rename and
 * image. POST /settings/reinstall belongs to the installs module.
 */
export function registerSettingsRoutes(app: FastifyInstance, deps: AppDeps) {
  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/settings/rename',
    summary: "Set the server's name and description",
    permission: 'settings.rename',
    mutates: true,
    body: RenameServerBody,
    handler: async (request, reply) => {
      await renameServer(deps, request.target.server, request.auth.actor, request.body);
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'PUT',
    url: '/servers/:server/settings/docker-image',
    summary: "Choose the server's image among its egg's (used from the next start)",
    permission: 'startup.docker-image',
    mutates: true,
    body: DockerImageBody,
    handler: async (request, reply) => {
      await setDockerImage(deps, request.target.server, request.auth.actor, request.body);
      return reply.status(204).send();
    },
  });
}
