import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.js';
import { clientRoute } from '../../http/routes.js';
import { CreateSubuserBody, SubuserParams, UpdateSubuserBody } from './subusers.schemas.js';
import {
  createSubuser,
  findSubuser,
  listSubusers,
  removeSubuser,
  updateSubuser,
  type SubuserCaller,
} from './subusers.service.js';
import { subuserItem, subuserList, systemPermissions } from './subusers.transformer.js';
import type { Authenticated, ServerTarget } from '../../http/client-resolver.js';

/** A server's subusers (docs/reference/accounts.md, Pterodactyl's SubuserController) and the permission catalogue. */
export function registerSubuserRoutes(app: FastifyInstance, deps: AppDeps) {
  const callerOf = (auth: Authenticated, target: ServerTarget): SubuserCaller => ({
    user: auth.user,
    access: target.access,
    actor: auth.actor,
  });

  clientRoute(app, {
    method: 'GET',
    url: '/permissions',
    summary: 'Every subuser permission, by group, with what it allows',
    handler: async () => systemPermissions(),
  });

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/users',
    summary: "List the server's subusers",
    permission: 'user.read',
    handler: async (request) => subuserList(await listSubusers(deps, request.target.server)),
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/users',
    summary: 'Add a subuser by email (an unknown email gets an account without a password)',
    permission: 'user.create',
    mutates: true,
    body: CreateSubuserBody,
    handler: async (request) => {
      const { server } = request.target;
      return subuserItem(await createSubuser(deps, server, callerOf(request.auth, request.target), request.body));
    },
  });

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/users/:user',
    summary: 'Show one subuser',
    permission: 'user.read',
    params: SubuserParams,
    handler: async (request) => {
      const { user } = request.params;
      return subuserItem(await findSubuser(deps, request.target.server, user));
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/users/:user',
    summary: "Replace a subuser's permissions",
    permission: 'user.update',
    mutates: true,
    body: UpdateSubuserBody,
    params: SubuserParams,
    handler: async (request) => {
      const { server } = request.target;
      const subuser = await findSubuser(deps, server, request.params.user);
      return subuserItem(await updateSubuser(deps, server, callerOf(request.auth, request.target), subuser, request.body));
    },
  });

  clientRoute(app, {
    method: 'DELETE',
    url: '/servers/:server/users/:user',
    summary: 'Remove a subuser from the server',
    permission: 'user.delete',
    mutates: true,
    params: SubuserParams,
    handler: async (request, reply) => {
      const { server } = request.target;
      const subuser = await findSubuser(deps, server, request.params.user);
      await removeSubuser(deps, server, callerOf(request.auth, request.target), subuser);
      return reply.status(204).send();
    },
  });
}
