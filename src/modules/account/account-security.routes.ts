import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../../deps.js';
import { list } from '../../http/envelopes.js';
import { clientRoute } from '../../http/routes.js';
import { listAccountActivity } from './account-activity.js';
import { changeEmail } from './account-email.js';
import { addSshKey, listSshKeys, removeSshKey } from './ssh-keys.service.js';
import { sshKeyItem } from './account.transformer.js';
import { disableTwoFactor, enableTwoFactor, setUpTwoFactor } from './two-factor.service.js';

const param = (description: string) => Type.Optional(Type.Unsafe<unknown>({ description }));

/** Documents the listing's parameters; the service checks them (400 or 422, as the servers' activity list). */
const AccountActivityQuery = Type.Object({
  page: param('Page number, 1 or more (default 1).'),
  per_page: param('Entries per page, 1 to 100 (default 25).'),
  sort: param('`-timestamp` (newest first, the default) or `timestamp`.'),
  'filter[event]': param('Case-insensitive substring of the event name.'),
});

const loose = (...names: string[]) => Type.Object(Object.fromEntries(names.map((n) => [n, Type.Optional(Type.Unknown())])));

/**
 * The account's security routes (docs/reference/accounts.md, docs/ACCOUNT.md): email, its own
 * activity, two-factor and SSH keys, at Pterodactyl's paths. Bodies are only
 * typed here: the services check them for Laravel's messages and order.
 */
export function registerAccountSecurityRoutes(
  app: FastifyInstance,
  deps: Pick<AppDeps, 'db' | 'clock' | 'config'> & { appKey: Uint8Array },
) {
  clientRoute(app, {
    method: 'PUT',
    url: '/account/email',
    summary: "Change the caller's email (needs their password)",
    body: loose('email', 'password'),
    handler: async (request, reply) => {
      await changeEmail(deps.db, request.auth, request.body, deps.clock.now());
      return reply.status(204).send();
    },
  });

  clientRoute(app, {
    method: 'GET',
    url: '/account/activity',
    summary: "The caller's own events (sign-ins, keys, password, email, two-factor, SSH keys), newest first",
    querystring: AccountActivityQuery,
    handler: (request) =>
      listAccountActivity(deps.db, request.auth.user, request.query, {
        url: request.url,
        baseUrl: deps.config.appUrl,
      }),
  });

  clientRoute(app, {
    method: 'GET',
    url: '/account/two-factor',
    summary: 'A new TOTP secret and its otpauth URI, pending until enabled (400 once two-factor is on)',
    handler: async (request) => ({ data: await setUpTwoFactor(deps, request.auth.user) }),
  });

  clientRoute(app, {
    method: 'POST',
    url: '/account/two-factor',
    summary: 'Turn two-factor on with a code and the password; the 10 recovery tokens are shown once',
    body: loose('code', 'password'),
    handler: async (request) => ({
      object: 'recovery_tokens',
      attributes: { tokens: await enableTwoFactor(deps, request.auth, request.body) },
    }),
  });

  for (const [method, url] of [
    ['POST', '/account/two-factor/disable'],
    ['DELETE', '/account/two-factor'],
  ] as const) {
    clientRoute(app, {
      method,
      url,
      summary: 'Turn two-factor off (needs the password)',
      body: Type.Optional(loose('password')),
      // Laravel's input() reads the query string too: older clients send DELETE ...?password=.
      querystring: loose('password'),
      handler: async (request, reply) => {
        await disableTwoFactor(deps, request.auth, request.body?.password ?? request.query.password);
        return reply.status(204).send();
      },
    });
  }

  clientRoute(app, {
    method: 'GET',
    url: '/account/ssh-keys',
    summary: "The caller's SSH public keys (used by SFTP)",
    handler: async (request) => list((await listSshKeys(deps.db, request.auth.user.id)).map(sshKeyItem)),
  });

  clientRoute(app, {
    method: 'POST',
    url: '/account/ssh-keys',
    summary: 'Add an SSH public key (no DSA; RSA of 2,048 bits or more)',
    body: loose('name', 'public_key'),
    handler: async (request) => sshKeyItem(await addSshKey(deps, request.auth, request.body)),
  });

  clientRoute(app, {
    method: 'POST',
    url: '/account/ssh-keys/remove',
    summary: "Remove one of the caller's SSH keys by fingerprint (204 whether or not it existed)",
    body: loose('fingerprint'),
    handler: async (request, reply) => {
      await removeSshKey(deps, request.auth, request.body.fingerprint);
      return reply.status(204).send();
    },
  });
}
