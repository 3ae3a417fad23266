import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import fastifyStatic from '@fastify/static';
// The route's schema.hide (kept out of the OpenAPI document) is @fastify/swagger's addition to Fastify's types.
import type {} from '@fastify/swagger';

/**
 * Serves the web console (docs/reference/web-console.md) that scripts/build.js bundles into
 * dist/console: its content-hashed files with a year's cache, and index.html
 * (no-cache, with the panel's APP_TIMEZONE in a <meta>, which the schedule
 * editor reads cron fields in) for `/` and any other GET that is a page of the
 * app rather than a file, so that deep links work. The API's own paths
 * (`/api/`, `/auth/`, `/health`) keep their 404 JSON. Without a build (tests
 * that build nothing) every page answers a 503 that says how to build one.
 */

export interface WebConsoleOptions {
  /** APP_TIMEZONE, for the schedule editor's next run times. */
  timezone: string;
  /** Where the build is; dist/console of this project by default. */
  dir?: string;
}

/** Paths that belong to the API: never answered with the app. */
const API_PATHS = /^\/(api|auth|health)(\/|$)/;
/** A file the build writes: one path segment with an extension (app.3F2A.js, chunk.X.js, app.Y.css). */
const FILE_NAME = /^\/([A-Za-z0-9_-][A-Za-z0-9._-]*\.[A-Za-z0-9]+)$/;
const HASHED = /\.[A-Z0-9]{8}\.(js|css)$/;
const YEAR_SECONDS = 365 * 24 * 3600;

/** The project folder: the first ancestor with package.json, from the sources (web/server) or the bundle (dist/). */
function projectRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
}

const escapeAttribute = (text: string) => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** What the app's index.html answers with; restrictive, since the app needs nothing but its own origin. */
const PAGE_HEADERS = {
  'cache-control': 'no-cache',
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; " +
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
};

export async function registerWebConsole(app: FastifyInstance, options: WebConsoleOptions): Promise<void> {
  const dir = options.dir ?? path.join(projectRoot(), 'dist', 'console');
  const indexFile = path.join(dir, 'index.html');
  // serve: false: only reply.sendFile (ETag, ranges, types, no path traversal); the route below decides what is a file.
  await app.register(fastifyStatic, { root: dir, serve: false, index: false, dotfiles: 'deny' });

  // index.html as built, with the time zone filled in; read again when a new build replaces it.
  let page: { key: string; html: string } | null = null;
  const readPage = (): string | null => {
    let stat: fs.Stats;
    try {
      stat = fs.statSync(indexFile);
    } catch {
      return null;
    }
    const key = `${stat.mtimeMs}:${stat.size}:${stat.ino}`;
    if (page?.key !== key) {
      const html = fs
        .readFileSync(indexFile, 'utf8')
        .replace(
          /<meta name="quetzal-timezone" content="[^"]*"\s*\/?>/,
          `<meta name="quetzal-timezone" content="${escapeAttribute(options.timezone)}">`,
        );
      page = { key, html };
    }
    return page.html;
  };

  const notBuilt = (reply: FastifyReply) =>
    reply
      .status(503)
      .header('cache-control', 'no-cache')
      .send({
        errors: [
          { code: 'ServiceUnavailableHttpException', status: '503', detail: 'The web console is not built: run npm install' },
        ],
      });

  app.get<{ Params: { '*': string } }>('/*', { schema: { hide: true } }, async (request, reply) => {
    const pathname = `/${request.params['*']}`;
    if (API_PATHS.test(pathname)) return reply.callNotFound();
    const file = FILE_NAME.exec(pathname)?.[1];
    if (file !== undefined && file !== 'index.html') {
      // A missing file is a 404, not the app: a stale chunk must not be parsed as HTML.
      if (!fs.existsSync(path.join(dir, file))) return reply.callNotFound();
      return reply.sendFile(file, HASHED.test(file) ? { maxAge: YEAR_SECONDS * 1000, immutable: true } : { maxAge: 0 });
    }
    const html = readPage();
    if (html === null) return notBuilt(reply);
    return reply.status(200).headers(PAGE_HEADERS).send(html);
  });
}
