/**
 * The baseline of bench/http.ts: a bare Fastify app that answers the same
 * route with a fixed body (the real app's first activity page, captured by
 * the parent), with the same logger level as the real service. Nothing else:
 * no authentication, database, validation or transformation. The body is kept
 * as an object, so Fastify serialises it on every request, as the real app
 * must.
 *
 *   BARE_BODY_FILE=<json> PORT=<port> [LOG_LEVEL=warn] node --import tsx bench/http-lib/bare-server.ts
 */
import fs from 'node:fs';
import Fastify from 'fastify';

const body = JSON.parse(fs.readFileSync(process.env.BARE_BODY_FILE ?? '', 'utf8')) as unknown;
const app = Fastify({ logger: { level: process.env.LOG_LEVEL ?? 'warn' } });
app.get('/api/client/servers/:server/activity', async () => body);

await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
process.on('SIGTERM', () => {
  void app.close().then(() => process.exit(0));
});
