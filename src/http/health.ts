import type { FastifyInstance } from 'fastify';

/**
 * GET /health, for load balancers: 200 while `checkDatabase` resolves, 503
 * when it throws. Hidden from the OpenAPI document.
 */
export function registerHealthRoute(app: FastifyInstance, checkDatabase: () => Promise<void>) {
  app.get('/health', { schema: { hide: true } }, async (_request, reply) => {
    try {
      await checkDatabase();
      return { status: 'ok' };
    } catch {
      return reply.status(503).send({ status: 'unavailable' });
    }
  });
}
