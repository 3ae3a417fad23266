import websocketPlugin from '@fastify/websocket';
import type { FastifyInstance } from 'fastify';
import { badRequest, notFound } from '../../http/errors.js';
import { clientRoute } from '../../http/routes.js';
import { MAX_INBOUND_FRAME_BYTES } from './websocket.frames.js';
import { SocketHub, type HubOptions } from './websocket.hub.js';
import { findSocketServer, issueWebsocketToken, publicBaseUrl, type WebsocketDeps } from './websocket.service.js';

/**
 * docs/reference/power-and-console.md#websocket: the token route (a client route, behind the guard) and the socket
 * itself, outside /api/client and outside the guard: a socket authenticates
 * with its first frame, as on Wings.
 */
export async function registerWebsocketRoutes(
  app: FastifyInstance,
  deps: WebsocketDeps,
  options: HubOptions = {},
): Promise<SocketHub> {
  const hub = new SocketHub(deps, app.log, options);
  await app.register(websocketPlugin, {
    options: { maxPayload: MAX_INBOUND_FRAME_BYTES },
    // Before the HTTP server closes: every socket is told the service is going away (1012, so clients reconnect).
    preClose(done) {
      hub.close();
      done();
    },
  });
  hub.start();

  clientRoute(app, {
    method: 'GET',
    url: '/servers/:server/websocket',
    summary: "A token for the server's live console, and the socket's URL (Wings' websocket)",
    permission: 'websocket.connect',
    handler: async (request) => ({
      data: await issueWebsocketToken(
        deps,
        request.target,
        request.auth.user,
        publicBaseUrl(deps.config.appUrl, app.server.address()),
      ),
    }),
  });

  app.route<{ Params: { uuid: string } }>({
    method: 'GET',
    url: '/api/servers/:uuid/ws',
    schema: { hide: true },
    // Before the upgrade, as Wings: an unknown server is a plain 404.
    preHandler: async (request) => {
      if (!(await findSocketServer(deps.db, request.params.uuid))) throw notFound();
    },
    handler: async () => {
      throw badRequest('This endpoint takes websocket connections only.');
    },
    wsHandler: (socket, request) => hub.accept(socket, request.params.uuid.toLowerCase(), request.ip),
  });
  return hub;
}
