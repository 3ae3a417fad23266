/**
 * Typed errors thrown by services and hooks. One error handler (http/error-handler.ts)
 * turns each into the Pterodactyl error body of docs/reference/api.md#errors.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
  ) {
    super(detail);
  }
}

export interface FieldFailure {
  field: string;
  rule: string;
  detail: string;
}

export class ValidationError extends HttpError {
  constructor(readonly failures: FieldFailure[]) {
    super(422, 'ValidationException', failures[0]?.detail ?? 'The given data was invalid.');
  }
  static of(field: string, rule: string, detail: string): ValidationError {
    return new ValidationError([{ field, rule, detail }]);
  }
}

export const badRequest = (detail: string, code = 'BadRequestHttpException') => new HttpError(400, code, detail);
export const unauthenticated = (detail = 'Unauthenticated.') => new HttpError(401, 'AuthenticationException', detail);
export const forbidden = (detail = 'This action is unauthorized.') => new HttpError(403, 'AccessDeniedHttpException', detail);
export const notFound = (detail = 'The requested resource could not be found on the server.') =>
  new HttpError(404, 'NotFoundHttpException', detail);
export const methodNotAllowed = (detail = 'The HTTP method used is not supported for this route.') =>
  new HttpError(405, 'MethodNotAllowedHttpException', detail);
export const conflict = (detail: string) => new HttpError(409, 'ConflictHttpException', detail);
export const payloadTooLarge = (detail = 'The request body is larger than 1 MiB.') =>
  new HttpError(413, 'PayloadTooLargeHttpException', detail);
export const unsupportedMediaType = (detail = 'The request body must be sent as application/json.') =>
  new HttpError(415, 'UnsupportedMediaTypeHttpException', detail);
export const serviceLimitExceeded = (detail: string) => new HttpError(400, 'ServiceLimitExceededException', detail);
export const displayException = (detail: string) => new HttpError(400, 'DisplayException', detail);
export const tooManyRequests = (detail = 'Too Many Attempts.') => new HttpError(429, 'TooManyRequestsHttpException', detail);
export const daemonFailed = (detail: string) => new HttpError(502, 'DaemonConnectionException', detail);
export const daemonTimedOut = (detail = 'The daemon did not answer in time.') =>
  new HttpError(504, 'DaemonConnectionException', detail);

export const GENERIC_500 = 'An unexpected error was encountered while processing this request, please try again.';

/** Laravel's wording for a field name: `time_offset` → "time offset", `a.b` → "a.b". */
export function attributeName(field: string): string {
  return field.replace(/_/g, ' ');
}
