import { Type } from '@sinclair/typebox';
import { ValidationError } from './errors.js';

/** A query parameter that must be a whole number in [min, max] (docs/reference/activity.md#listing, docs/reference/servers.md#the-server-routes). */
export function integerParam(raw: unknown, name: string, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (typeof raw !== 'string' || !/^-?\d+$/.test(raw.trim())) {
    throw ValidationError.of(name, 'integer', `The ${name.replace(/_/g, ' ')} field must be an integer.`);
  }
  const value = Number(raw.trim());
  if (value < min) throw ValidationError.of(name, 'min', `The ${name.replace(/_/g, ' ')} field must be at least ${min}.`);
  if (value > max) {
    throw ValidationError.of(name, 'max', `The ${name.replace(/_/g, ' ')} field must not be greater than ${max}.`);
  }
  return value;
}

/** A listing's `page` and `per_page` as given: parsePageQuery checks them, with Laravel's messages. */
export const PageQuery = Type.Object({
  page: Type.Optional(Type.String()),
  per_page: Type.Optional(Type.String()),
});

/** `page` (>= 1) and `per_page` (1..max) from a query; page numbers have no upper bound but must be safe integers. */
export function parsePageQuery(
  query: { page?: unknown; per_page?: unknown },
  opts: { defaultPerPage: number; maxPerPage: number },
): PageRequest {
  return {
    perPage: integerParam(query.per_page, 'per_page', opts.defaultPerPage, 1, opts.maxPerPage),
    page: integerParam(query.page, 'page', 1, 1, Number.MAX_SAFE_INTEGER),
  };
}

/** Which page of a listing a request asks for. */
export interface PageRequest {
  page: number;
  perPage: number;
}
