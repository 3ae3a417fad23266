import { registerRequestLog } from './http/request-log.js';
import Fastify, { LogController, type FastifyInstance, type HTTPMethods } from 'fastify';
import qs from 'qs';
import swagger from '@fastify/swagger';
import { registerJsonBodyParser, BODY_LIMIT } from './http/body-parser.js';
import { registerErrorHandler } from './http/error-handler.js';
import { answerClientError, answerFrameworkError, MAX_PARAM_LENGTH, registerHostHeaderCheck } from './http/framework-errors.js';
import { methodNotAllowed, notFound } from './http/errors.js';
import { registerClientGuard } from './http/client-guard.js';
import { fastifyTrustProxy, registerForwardedForCheck } from './http/client-address.js';
import type { ClientResolver } from './http/client-resolver.js';
import { registerHealthRoute } from './http/health.js';
import { CLIENT_PREFIX } from './http/routes.js';
import { authenticateToken } from './modules/keys/keys.service.js';
import { authenticateSession } from './modules/sessions/sessions.service.js';
import { registerSessionRoutes } from './modules/sessions/sessions.routes.js';
import { registerAccountRoutes } from './modules/account/account.routes.js';
import { registerAccountSecurityRoutes } from './modules/account/account-security.routes.js';
import { pingDatabase } from './modules/servers/servers.repository.js';
import { decideServerTarget } from './modules/servers/servers.targets.js';
import { registerServerRoutes } from './modules/servers/servers.routes.js';
import { registerScheduleRoutes } from './modules/schedules/schedules.routes.js';
import { registerTaskRoutes } from './modules/tasks/tasks.routes.js';
import { registerActivityRoutes } from './modules/activity/activity.routes.js';
import { registerBackupRoutes } from './modules/backups/backups.routes.js';
import { registerFileRoutes } from './modules/files/files.routes.js';
import { registerFileTransferRoutes } from './modules/files/files.transfer.routes.js';
import { registerAllocationRoutes } from './modules/allocations/allocations.routes.js';
import { registerDatabaseRoutes } from './modules/databases/databases.routes.js';
import { registerInstallRoutes } from './modules/installs/installs.routes.js';
import { registerStartupRoutes } from './modules/startup/startup.routes.js';
import { registerSettingsRoutes } from './modules/settings/settings.routes.js';
import { registerSubuserRoutes } from './modules/subusers/subusers.routes.js';
import { registerWebsocketRoutes } from './modules/websocket/websocket.routes.js';
import type { HubOptions } from './modules/websocket/websocket.hub.js';
import { loadAppKey } from './app-key.js';
import { ServerEvents } from './server-events.js';
import type { AppDeps } from './deps.js';
import { registerWebConsole } from '../web/server/console.js';

export interface BuildAppOptions {
  logger?: boolean | object;
  /** The live console's intervals and limits (tests shorten them). */
  websocket?: HubOptions;
}

const METHODS: HTTPMethods[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

export type { AppDeps };

export async function buildApp(deps: AppDeps, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger ?? { level: deps.config.logLevel },
    // Requests are logged at debug by src/http/request-log.ts, not at info by Fastify.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    // Only TRUST_PROXY's own addresses, never Fastify's `true` or hop counts (src/http/client-address.ts).
    trustProxy: fastifyTrustProxy(deps.config.trustProxy),
    // Errors raised before any route runs get docs/reference/api.md#errors's body too.
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    http: { requireHostHeader: false },
    routerOptions: {
      ignoreTrailingSlash: true,
      maxParamLength: MAX_PARAM_LENGTH,
      querystringParser: (query: string) => qs.parse(query, { depth: 2, parameterLimit: 100, allowPrototypes: false }),
    },
    ajv: {
      customOptions: {
        allErrors: true,
        coerceTypes: false,
        removeAdditional: false,
        useDefaults: false,
        verbose: true,
        allowUnionTypes: true,
        keywords: ['x-rule'],
      },
    },
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Quetzal client API', version: '1.0.0', description: 'Pterodactyl-compatible client API' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
  });

  // First of all hooks: nothing may read a forwarded address the panel does not believe.
  registerForwardedForCheck(app, deps.config.trustProxy);
  registerJsonBodyParser(app);
  registerErrorHandler(app);
  registerRequestLog(app);
  registerHostHeaderCheck(app);
  const resolver: ClientResolver = {
    authenticate: (token, ip, now) => authenticateToken(deps.db, token, ip, now),
    authenticateSession: (token, ip, now) => authenticateSession(deps.db, token, ip, now),
    findServerTarget: (user, ids, action) => decideServerTarget(deps.db, user, ids, action),
  };
  registerClientGuard(app, { resolver, clock: deps.clock, rateLimitPerMinute: deps.config.rateLimitPerMinute });

  // Known paths answered with the wrong method are a 405 (docs/reference/api.md#errors), so remember every path's methods.
  const methodsByPath = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const known = methodsByPath.get(route.url) ?? new Set<string>();
    for (const method of methods) known.add(method);
    methodsByPath.set(route.url, known);
  });

  registerHealthRoute(
    app,
    () => pingDatabase(deps.db),
    () => deps.daemon.containment,
  );
  app.get(`${CLIENT_PREFIX}/openapi.json`, { schema: { hide: true } }, async () => app.swagger());

  registerServerRoutes(app, deps);
  registerScheduleRoutes(app, deps);
  registerTaskRoutes(app, deps);
  registerActivityRoutes(app, deps);
  // Backups and restores tell live consoles when they end (docs/reference/power-and-console.md#websocket).
  const serverEvents = deps.serverEvents ?? new ServerEvents((err) => app.log.error({ err }, 'a server event listener failed'));
  const appKey = deps.appKey ?? loadAppKey(deps.config.dataDir, { APP_KEY: deps.config.appKey });
  registerBackupRoutes(app, { ...deps, serverEvents, appKey });
  registerAllocationRoutes(app, deps);
  registerDatabaseRoutes(app, { ...deps, appKey });
  registerInstallRoutes(app, { ...deps, serverEvents });
  registerStartupRoutes(app, deps);
  registerSettingsRoutes(app, deps);
  registerSubuserRoutes(app, deps);
  // docs/reference/files-and-sftp.md: the file routes, and what their signed URLs lead to.
  await registerFileRoutes(app, { ...deps, appKey });
  await registerFileTransferRoutes(app, { ...deps, appKey });
  await registerWebsocketRoutes(
    app,
    { ...deps, serverEvents, appKey },
    { consoleThrottle: deps.config.consoleThrottle, ...options.websocket },
  );
  await registerWebConsole(app, { timezone: deps.config.timezone });
  registerAccountRoutes(app, deps);
  registerAccountSecurityRoutes(app, { ...deps, appKey });
  registerSessionRoutes(app, { ...deps, appKey });

  for (const [url, methods] of [...methodsByPath]) {
    const missing = METHODS.filter((m) => !methods.has(m));
    if (missing.length === 0 || !url.startsWith(CLIENT_PREFIX)) continue;
    app.route({
      method: missing,
      url,
      schema: { hide: true },
      handler: async () => {
        throw methodNotAllowed();
      },
    });
  }
  app.setNotFoundHandler(async () => {
    throw notFound('The requested route could not be found.');
  });
  return app;
}
