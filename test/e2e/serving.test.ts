import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerWebConsole } from '../../web/server/console.js';

/**
 * How the service serves the console's files (web/server/console.ts), on a
 * bare Fastify app with a not-found handler like the service's: a build's
 * files, index.html for the app's pages, the API's paths left alone, and a
 * clear 503 when nothing is built.
 */

const NOT_FOUND = {
  errors: [{ code: 'NotFoundHttpException', status: '404', detail: 'The requested route could not be found.' }],
};

async function appServing(dir: string): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  await registerWebConsole(app, { timezone: 'Europe/Paris', dir });
  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/api/client', async () => ({ object: 'list', data: [] }));
  app.setNotFoundHandler(async (_request, reply) => reply.status(404).send(NOT_FOUND));
  return app;
}

let built: string;
let empty: string;

beforeAll(() => {
  built = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-console-'));
  empty = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-console-empty-'));
  fs.writeFileSync(
    path.join(built, 'index.html'),
    '<!doctype html><meta name="quetzal-timezone" content=""><script type="module" src="/app.ABCDEFGH.js"></script>',
  );
  fs.writeFileSync(path.join(built, 'app.ABCDEFGH.js'), 'console.log(1)');
  fs.writeFileSync(path.join(built, 'app.ABCDEFGH.css'), 'body{}');
});

afterAll(() => {
  fs.rmSync(built, { recursive: true, force: true });
  fs.rmSync(empty, { recursive: true, force: true });
});

describe('serving the web console', () => {
  it('answers index.html for / and deep links, with the time zone and no-cache', async () => {
    const app = await appServing(built);
    for (const url of ['/', '/server/1a2b3c4d', '/server/1a2b3c4d/schedules/3?x=1', '/account', '/healthz', '/apis']) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type'], url).toMatch(/^text\/html/);
      expect(res.headers['cache-control'], url).toBe('no-cache');
      expect(res.headers['content-security-policy'], url).toContain("default-src 'self'");
      expect(res.body, url).toContain('<meta name="quetzal-timezone" content="Europe/Paris">');
    }
    expect((await app.inject({ method: 'HEAD', url: '/server/1a2b3c4d' })).statusCode).toBe(200);
    await app.close();
  });

  it('serves the hashed files for a year, and a missing file is a 404, not the app', async () => {
    const app = await appServing(built);
    const script = await app.inject({ method: 'GET', url: '/app.ABCDEFGH.js' });
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toMatch(/javascript/);
    expect(script.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(script.body).toBe('console.log(1)');
    expect((await app.inject({ method: 'GET', url: '/app.ABCDEFGH.css' })).headers['content-type']).toMatch(/^text\/css/);
    for (const url of ['/chunk.ZZZZZZZZ.js', '/favicon.ico']) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.json(), url).toEqual(NOT_FOUND);
    }
    // Nothing outside the build is ever sent: such paths are pages of the app, at worst.
    fs.writeFileSync(path.join(path.dirname(built), 'outside-the-build.txt'), 'secret');
    // A build's half-written index (scripts/build.js writes .index-<pid>.html, then renames it).
    fs.writeFileSync(path.join(built, '.index-1.html'), 'secret');
    expect((await app.inject({ method: 'GET', url: '/.index-1.html' })).body).not.toContain('secret');
    fs.rmSync(path.join(built, '.index-1.html'));
    for (const url of [
      '/..%2Foutside-the-build.txt',
      '/%2e%2e/outside-the-build.txt',
      '/../outside-the-build.txt',
      '/app.ABCDEFGH.js/..%2F..%2Foutside-the-build.txt',
    ]) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.body, url).not.toContain('secret');
    }
    fs.rmSync(path.join(path.dirname(built), 'outside-the-build.txt'));
    await app.close();
  });

  it("leaves the API's paths to the API: its routes, its 404 JSON, other methods", async () => {
    const app = await appServing(built);
    expect((await app.inject({ method: 'GET', url: '/api/client' })).json()).toEqual({ object: 'list', data: [] });
    expect((await app.inject({ method: 'GET', url: '/health' })).json()).toEqual({ status: 'ok' });
    for (const url of ['/api/client/nope', '/api', '/auth/whatever', '/health/deep']) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.json(), url).toEqual(NOT_FOUND);
    }
    expect((await app.inject({ method: 'POST', url: '/server/1a2b3c4d' })).statusCode).toBe(404);
    await app.close();
  });

  it('answers a clear 503 when the console is not built', async () => {
    const app = await appServing(empty);
    for (const url of ['/', '/server/1a2b3c4d/backups']) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(503);
      expect(res.json(), url).toEqual({
        errors: [
          { code: 'ServiceUnavailableHttpException', status: '503', detail: 'The web console is not built: run npm install' },
        ],
      });
    }
    expect((await app.inject({ method: 'GET', url: '/api/client/nope' })).statusCode).toBe(404);
    // Built later (npm install while the service runs): served from then on.
    fs.copyFileSync(path.join(built, 'index.html'), path.join(empty, 'index.html'));
    expect((await app.inject({ method: 'GET', url: '/' })).statusCode).toBe(200);
    fs.rmSync(path.join(empty, 'index.html'));
    await app.close();
  });
});
