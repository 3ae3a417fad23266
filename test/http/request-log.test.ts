import { Writable } from 'node:stream';
import Fastify, { LogController } from 'fastify';
import { describe, expect, it } from 'vitest';
import { registerRequestLog } from '../../src/http/request-log.js';

/** Requests are logged at debug, a 5xx at warn: the default LOG_LEVEL (info) shows no line per request. */
describe('request log', () => {
  async function linesAt(level: string): Promise<Array<Record<string, any>>> {
    const lines: Array<Record<string, any>> = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const app = Fastify({ logger: { level, stream }, logController: new LogController({ disableRequestLogging: true }) });
    registerRequestLog(app);
    app.get('/ok', async () => ({ ok: true }));
    app.get('/broken', async (_request, reply) => reply.status(503).send({ down: true }));
    try {
      expect((await app.inject({ method: 'GET', url: '/ok' })).statusCode).toBe(200);
      expect((await app.inject({ method: 'GET', url: '/missing' })).statusCode).toBe(404);
      expect((await app.inject({ method: 'GET', url: '/broken' })).statusCode).toBe(503);
    } finally {
      await app.close();
    }
    return lines.filter((line) => line.msg === 'request completed' || line.msg === 'request failed');
  }

  it('shows only the 5xx at info', async () => {
    const lines = await linesAt('info');
    expect(lines.map((l) => [l.msg, l.statusCode, l.url])).toEqual([['request failed', 503, '/broken']]);
  });

  it('shows every request at debug', async () => {
    const lines = await linesAt('debug');
    expect(lines.map((l) => [l.statusCode, l.method, l.url])).toEqual([
      [200, 'GET', '/ok'],
      [404, 'GET', '/missing'],
      [503, 'GET', '/broken'],
    ]);
  });
});
