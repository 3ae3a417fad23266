import http from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from './error-handler.js';
import { badRequest, HttpError, notFound } from './errors.js';

/**
 * The errors Fastify and Node's HTTP parser raise before any route runs,
 * answered with docs/reference/api.md#errors's body like every other error.
 */

/**
 * Longest path parameter the router hands to a route. Longer than any id a
 * route resolves (a UUID is 36 characters) so that such ids still go through
 * the guard (401 before 404), short enough that no handler sees kilobytes.
 */
export const MAX_PARAM_LENGTH = 256;

/**
 * HTTP/1.1 requires a Host header (RFC 9112, 3.2). Node refuses a request
 * without one by itself, with an empty body; the server is created with
 * `requireHostHeader: false` and this hook answers instead, in docs/reference/api.md#errors's body.
 */
export function registerHostHeaderCheck(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      done(badRequest('The Host header is required.'));
      return;
    }
    done();
  });
}

/** Fastify's `frameworkErrors`: a bad percent-encoding in the path, an over-long parameter. */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const known =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? // A parameter this long names no row: the 404 of any unknown id (DECISIONS.md: 404, not 414).
        notFound()
      : error.code === 'FST_ERR_BAD_URL'
        ? badRequest('The request path is not a valid URL.')
        : badRequest('The request could not be understood.');
  request.log.debug({ err: error }, known.detail);
  void reply.status(known.status).type('application/json').send(errorBody(known));
}

/** What Node's parser refused, as the status and code a client gets. */
export function clientErrorAnswer(err: NodeJS.ErrnoException & { rawPacket?: unknown }): HttpError {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'ERR_HTTP_HEADERS_TIMEOUT') {
    return new HttpError(408, 'RequestTimeoutHttpException', 'The request was not received in time.');
  }
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    // Node counts the request line toward the header limit: tell the two apart by the first line.
    return requestLineTooLong(err.rawPacket)
      ? new HttpError(414, 'UriTooLongHttpException', 'The request path is too long.')
      : new HttpError(431, 'RequestHeaderFieldsTooLargeHttpException', 'The request headers are too large.');
  }
  return badRequest('The request could not be understood.');
}

function requestLineTooLong(raw: unknown): boolean {
  if (!Buffer.isBuffer(raw)) return true;
  const end = raw.indexOf('\r\n');
  return end === -1 || end > 8 * 1024;
}

/**
 * Node's `clientError`: the request could not even be parsed (a raw non-ASCII
 * byte in the path or query, a header the parser refuses, an over-long
 * request line). There is no request object, so the answer is written onto
 * the socket, which is then closed, as Node does by default.
 */
export function answerClientError(err: NodeJS.ErrnoException & { rawPacket?: unknown }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // A response already under way on this socket cannot be followed by another.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const known = clientErrorAnswer(err);
    const body = JSON.stringify(errorBody(known));
    socket.write(
      `HTTP/1.1 ${known.status} ${http.STATUS_CODES[known.status] ?? 'Error'}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
