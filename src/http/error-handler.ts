import type { FastifyError, FastifyInstance } from 'fastify';
import {
  badRequest,
  conflict,
  daemonFailed,
  daemonTimedOut,
  GENERIC_500,
  HttpError,
  payloadTooLarge,
  unsupportedMediaType,
  ValidationError,
} from './errors.js';
import { validationErrorFromSchema } from './validation.js';
import { DaemonBusyError, DaemonError, DaemonTimeoutError } from '../daemon/daemon.js';

const FASTIFY_ERRORS: Record<string, () => HttpError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: () => payloadTooLarge(),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => unsupportedMediaType(),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => badRequest('The request body could not be read.'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => badRequest('The request body could not be read.'),
};

/** The one place where errors become docs/reference/api.md#errors bodies. Anything unexpected is a generic 500. */
export function toHttpError(error: unknown): HttpError | null {
  if (error instanceof HttpError) return error;
  if (error instanceof DaemonTimeoutError) return daemonTimedOut(error.message);
  if (error instanceof DaemonBusyError) return conflict(error.message);
  if (error instanceof DaemonError) return daemonFailed(error.message);
  const fastifyError = error as Partial<FastifyError> & { validationContext?: string };
  if (fastifyError.validation) {
    if (
      fastifyError.validationContext === 'body' &&
      fastifyError.validation.some((e) => e.instancePath === '' && e.keyword === 'type')
    ) {
      return badRequest('The request body must be a JSON object.');
    }
    return validationErrorFromSchema(fastifyError.validation);
  }
  const byCode = fastifyError.code ? FASTIFY_ERRORS[fastifyError.code] : undefined;
  if (byCode) return byCode();
  if (error instanceof SyntaxError || (fastifyError.statusCode === 400 && !fastifyError.code?.startsWith('FST_ERR_VALIDATION'))) {
    return badRequest('The request body is not valid JSON.');
  }
  return null;
}

export function errorBody(error: HttpError) {
  if (error instanceof ValidationError) {
    return {
      errors: error.failures.map((f) => ({
        code: 'ValidationException',
        status: '422',
        detail: f.detail,
        meta: { source_field: f.field, rule: f.rule },
      })),
    };
  }
  return { errors: [{ code: error.code, status: String(error.status), detail: error.detail }] };
}

export function registerErrorHandler(app: FastifyInstance) {
  app.setErrorHandler((error, request, reply) => {
    const known = toHttpError(error);
    if (known) {
      if (known.status >= 500) request.log.warn({ err: error }, known.detail);
      return reply.status(known.status).type('application/json').send(errorBody(known));
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply
      .status(500)
      .type('application/json')
      .send({ errors: [{ code: 'InternalServerError', status: '500', detail: GENERIC_500 }] });
  });
}
