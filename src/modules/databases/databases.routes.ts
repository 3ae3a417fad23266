import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { list } from '../../http/envelopes.js';
import { clientRoute } from '../../http/routes.js';
import { CreateDatabaseBody, DatabaseListQuery } from './databases.schemas.js';
import {
  createServerDatabase,
  deleteServerDatabaseEverywhere,
  findServerDatabase,
  listServerDatabases,
  rotateServerDatabasePassword,
  type DatabaseDeps,
} from './databases.service.js';
import { databaseItem, includesPassword } from './databases.transformer.js';

const DatabaseParams = Type.Object({ server: Type.String(), database: Type.String() });

/** A server's databases on the admin's database hosts (docs/reference/accounts.md, docs/DATABASES.md), Pterodactyl's DatabaseController. */
export function registerDatabaseRoutes(app: FastifyInstance, deps: DatabaseDeps) {
  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/databases',
    summary: "List the server's databases",
    permission: 'database.read',
    querystring: DatabaseListQuery,
    handler: async (request) => {
      const { server, access } = request.target;
      const withPassword = includesPassword(request.query.include);
      const views = await listServerDatabases(deps.db, server);
      return list(views.map((view) => databaseItem(deps, view, access, withPassword)));
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/databases',
    summary: 'Create a database for the server on the first database host with room',
    permission: 'database.create',
    mutates: true,
    body: CreateDatabaseBody,
    handler: async (request) => {
      const { server, access } = request.target;
      const view = await createServerDatabase(deps, server, request.auth.actor, request.body);
      return databaseItem(deps, view, access, true);
    },
  });

  clientRoute(app, {
    method: 'POST',
    url: '/servers/:server/databases/:database/rotate-password',
    summary: "Give the database's user a new random password",
    permission: 'database.update',
    mutates: true,
    params: DatabaseParams,
    handler: async (request) => {
      const { server, access } = request.target;
      const view = await findServerDatabase(deps.db, server, request.params.database);
      const rotated = await rotateServerDatabasePassword(deps, server, view, request.auth.actor);
      return databaseItem(deps, rotated, access, true);
    },
  });

  clientRoute(app, {
    method: 'DELETE',
    url: '/servers/:server/databases/:database',
    summary: 'Drop the database and its user on the host',
    permission: 'database.delete',
    mutates: true,
    params: DatabaseParams,
    handler: async (request, reply) => {
      const { server } = request.target;
      const view = await findServerDatabase(deps.db, server, request.params.database);
      await deleteServerDatabaseEverywhere(deps, server, view, request.auth.actor);
      return reply.status(204).send();
    },
  });
}
