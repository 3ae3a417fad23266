import type { FastifyInstance } from 'fastify';
import { unsupportedMediaType } from './errors.js';

export const BODY_LIMIT = 1024 * 1024;

/**
 * Reads every request body as JSON (docs/reference/api.md#errors): `application/json`, any
 * `*\/*+json`, or no Content-Type at all. An empty body is "no body", whatever
 * its Content-Type says — one real client sends a JSON content type with an
 * empty restore request. A non-empty body of another type is a 415.
 */
export function registerJsonBodyParser(app: FastifyInstance) {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  // An empty Content-Type header is no Content-Type at all.
  // A callback hook, not an async one: it runs on every request and needs no promise.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.headers['content-type']?.trim() === '') delete request.headers['content-type'];
    done();
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: BODY_LIMIT }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== '' && type !== 'application/json' && !/^[a-z0-9.+-]+\/[a-z0-9.+-]*\+json$/.test(type)) {
      return done(unsupportedMediaType(), undefined);
    }
    void parseJson(request, text, done);
  });
}

/**
 * For routes whose body is a file's bytes (`POST /files/write`, docs/reference/files-and-sftp.md): in
 * the scope `scope` (an encapsulated plugin holding only those routes), any
 * Content-Type, or none, hands the handler the request's raw stream
 * unread, so the bytes go straight to the volume and are counted against the
 * disk limit as they arrive. The caller bounds how many bytes it takes.
 */
export function registerRawBodyParser(scope: FastifyInstance) {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
}
