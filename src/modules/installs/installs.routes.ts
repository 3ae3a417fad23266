import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.js';
import { clientRoute } from '../../http/routes.js';
import type { ServerEvents } from '../../server-events.js';
import { claimInstall, runClaimedInstall } from './install.service.js';

/**
 * POST /settings/reinstall (docs/reference/eggs-and-installs.md, Pterodactyl's SettingsController):
 * `settings.reinstall`; 409 while the server is suspended, installing, failed
 * to install or restoring a backup (docs/reference/servers.md#status: a failed install is retried by the
 * admin's `server:reinstall`). The claim and `server:reinstall` commit
 * together, then 202 (`[]`, as Pterodactyl answers) and the install runs in
 * the background: the server is stopped, the egg's script runs on its volume.
 */
export function registerInstallRoutes(app: FastifyInstance, deps: AppDeps & { serverEvents: ServerEvents }) {
  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/settings/reinstall',
    summary: "Reinstall the server: stop it and run its egg's install script again (202; runs in the background)",
    permission: 'settings.reinstall',
    mutates: true,
    blockedDuringRestore: true,
    handler: async (request, reply) => {
      const request_ = { reinstall: true, actor: request.auth.actor, from: [null] } as const;
      const server = await claimInstall(deps, request.target.server.id, request_);
      deps.jobs.run(`reinstall ${server.uuid}`, async () => {
        await runClaimedInstall({ ...deps, logger: request.log }, server, request_);
      });
      return reply.status(202).send([]);
    },
  });
}
