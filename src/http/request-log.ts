import type { FastifyInstance } from 'fastify';

/**
 * One log line per request, at debug: at the default LOG_LEVEL (info) a busy
 * panel's every poll would be noise. Fastify's own "incoming request" and
 * "request completed" lines are off (src/app.ts's `logController`);
 * failures still reach the log at warn/error from the error handler
 * (src/http/error-handler.ts), and a 5xx answered without it at warn here.
 */
export function registerRequestLog(app: FastifyInstance): void {
  app.addHook('onResponse', async (request, reply) => {
    const entry = {
      method: request.method,
      url: request.url,
      statusCode: reply.statusCode,
      responseTime: Math.round(reply.elapsedTime),
    };
    if (reply.statusCode >= 500) request.log.warn(entry, 'request failed');
    else request.log.debug(entry, 'request completed');
  });
}
