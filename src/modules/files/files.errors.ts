/**
 * The one place a refused file operation (VolumeFileError) becomes an HTTP
 * error in docs/reference/api.md#errors's shape: a caller's mistake is a 4xx, never a 500.
 */
import { VolumeFileError, type VolumeFileErrorKind } from '../../daemon/daemon.js';
import { badRequest, conflict, HttpError, notFound } from '../../http/errors.js';

const STATUS: Record<VolumeFileErrorKind, (detail: string) => HttpError> = {
  'invalid-path': (detail) => badRequest(detail),
  'not-found': (detail) => notFound(detail),
  // Pterodactyl (Wings) answers 400 for some of these; a taken name is a conflict with what is there (docs/FILES.md).
  exists: (detail) => conflict(detail),
  'not-a-file': (detail) => badRequest(detail),
  'not-a-directory': (detail) => badRequest(detail),
  'too-large': (detail) => badRequest(detail),
  'disk-limit': (detail) => conflict(detail),
  archive: (detail) => badRequest(detail),
};

/** The HTTP error for `err` when it is a refused file operation; otherwise `err` itself. */
export function toHttpError(err: unknown): unknown {
  if (err instanceof VolumeFileError) return STATUS[err.kind](err.message);
  return err;
}

/** Runs `work`, turning a VolumeFileError it throws into its HTTP error. */
export async function mappingFileErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw toHttpError(err);
  }
}
