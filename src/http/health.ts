import type { FastifyInstance } from 'fastify';

/**
 * GET /health, for load balancers and operators: 200 while `checkDatabase`
 * resolves, 503 when it throws; either way it says whether server processes
 * run confined (docs/reference/containment.md), which `CONTAINMENT=auto` decides at start. Hidden
 * from the OpenAPI document.
 */
export function registerHealthRoute(app: FastifyInstance, checkDatabase: () => Promise<void>, containment: () => 'on' | 'off') {
  app.get('/health', { schema: { hide: true } }, async (_request, reply) => {
    try {
      await checkDatabase();
      return { status: 'ok', containment: containment() };
    } catch {
      return reply.status(503).send({ status: 'unavailable', containment: containment() });
    }
  });
}
