import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.js';
import { list } from '../../http/envelopes.js';
import { clientRoute } from '../../http/routes.js';
import { ApiKeyParams, StoreApiKeyBody, UpdatePasswordBody } from './account.schemas.js';
import { changePassword, createAccountApiKey, deleteAccountApiKey, listApiKeys } from './account.service.js';
import { accountItem, apiKeyItem } from './account.transformer.js';

/**
 * The caller's own account (Pterodactyl's /api/client/account routes), with a
 * key or a session alike. Changes are logged in the account's own activity
 * (account-activity.ts), not the servers' log.
 */
export function registerAccountRoutes(app: FastifyInstance, deps: Pick<AppDeps, 'db' | 'dialect' | 'clock'>) {
  clientRoute(app, {
    method: 'GET',
    url: '/account',
    summary: 'The signed-in user',
    handler: async (request) => accountItem(request.auth.user),
  });

  clientRoute(app, {
    method: 'PUT',
    url: '/account/password',
    summary: "Change the caller's password; ends their other sessions",
    body: UpdatePasswordBody,
    handler: async (request, reply) => {
      await changePassword(deps.db, request.auth, request.body, deps.clock.now());
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'GET',
    url: '/account/api-keys',
    summary: "The caller's API keys",
    handler: async (request) => list((await listApiKeys(deps.db, request.auth.user.id)).map(apiKeyItem)),
  });

  clientRoute(app, {
    method: 'POST',
    url: '/account/api-keys',
    summary: 'Create an API key; its secret is shown once, in meta.secret_token',
    body: StoreApiKeyBody,
    handler: async (request) => {
      const { key, token } = await createAccountApiKey(deps, request.auth, request.body, deps.clock.now());
      return { ...apiKeyItem(key), meta: { secret_token: token } };
    },
  });

  clientRoute(app, {
    method: 'DELETE',
    url: '/account/api-keys/:identifier',
    summary: "Revoke one of the caller's API keys",
    params: ApiKeyParams,
    handler: async (request, reply) => {
      await deleteAccountApiKey(deps.db, request.auth, request.params.identifier, deps.clock.now());
      return reply.status(204).send();
    },
  });
}
