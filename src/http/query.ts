import { ValidationError } from './errors.js';

/** A query parameter that must be a whole number in [min, max] (SPEC 3, 8). */
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

/** `page` (>= 1) and `per_page` (1..max) from a query; page numbers have no upper bound but must be safe integers. */
export function parsePageQuery(query: unknown, opts: { defaultPerPage: number; maxPerPage: number }) {
  const q = (query ?? {}) as Record<string, unknown>;
  return {
    perPage: integerParam(q.per_page, 'per_page', opts.defaultPerPage, 1, opts.maxPerPage),
    page: integerParam(q.page, 'page', 1, 1, Number.MAX_SAFE_INTEGER),
  };
}
