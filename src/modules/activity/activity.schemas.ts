import { Type } from '@sinclair/typebox';
import { badRequest, ValidationError } from '../../http/errors.js';
import { integerParam } from '../../http/query.js';
import type { ActivityListQuery } from './activity.types.js';

/**
 * The listing's query (docs/reference/activity.md#listing). The schema documents the parameters in the
 * OpenAPI document but constrains nothing: the rules below decide between a
 * 400 (unknown sort or filter, `filter` not an object) and a 422 (a bad value),
 * which a schema failure could not tell apart.
 */
const param = (description: string) => Type.Optional(Type.Unsafe<unknown>({ description }));

export const ActivityListQuerySchema = Type.Object({
  page: param('Page number, 1 or more (default 1). A page past the end is empty, with correct meta.'),
  per_page: param('Entries per page, 1 to 100 (default 25).'),
  sort: param('`-timestamp` (newest first, the default) or `timestamp`; ties keep insertion order.'),
  'filter[event]': param('Case-insensitive substring of the event name; `%`, `_` and `\\` match themselves.'),
  'filter[ip]': param('Case-insensitive substring of the IP; matches only entries whose IP the caller may see.'),
  'filter[actor_id]': param("A user UUID (that user's entries) or `system` (entries with no user actor)."),
  include: param('`actor` is accepted; the actor is always included.'),
});

export const ACTIVITY_PER_PAGE = { default: 25, max: 100 } as const;
const FILTERS = ['event', 'ip', 'actor_id'] as const;
const SORTS = ['timestamp', '-timestamp'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A query string parameter as Laravel's TrimStrings/ConvertEmptyStringsToNull leave it: trimmed, '' is absent. */
function given(value: unknown): unknown {
  const trimmed = typeof value === 'string' ? value.trim() : value;
  return trimmed === '' || trimmed === null ? undefined : trimmed;
}

/** Turns the parsed query string into a listing request, or the docs/reference/api.md#errors error. */
export function parseActivityQuery(raw: Readonly<Record<string, unknown>> | undefined): ActivityListQuery {
  const q = raw ?? {};

  // 400s: the shape of the request (Spatie's QueryBuilder refuses these before reading any value).
  const filter = given(q.filter);
  if (filter !== undefined && (typeof filter !== 'object' || Array.isArray(filter))) {
    throw badRequest('The filter parameter must be given as filter[name]=value.');
  }
  const filters = (filter ?? {}) as Record<string, unknown>;
  const unknown = Object.keys(filters).filter((key) => !(FILTERS as readonly string[]).includes(key));
  if (unknown.length > 0) {
    throw badRequest(
      `Requested filter(s) \`${unknown.join(', ')}\` are not allowed. Allowed filter(s) are \`${FILTERS.join(', ')}\`.`,
      'InvalidFilterQuery',
    );
  }
  const sort = given(q.sort) ?? '-timestamp';
  if (typeof sort !== 'string' || !SORTS.includes(sort)) {
    const shown = typeof sort === 'string' ? sort : JSON.stringify(sort);
    throw badRequest(
      `Requested sort(s) \`${shown}\` is not allowed. Allowed sort(s) are \`${SORTS.join(', ')}\`.`,
      'InvalidSortQuery',
    );
  }

  // 422s: the values.
  const failures: ValidationError['failures'] = [];
  const collect = <T>(read: () => T): T | undefined => {
    try {
      return read();
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      failures.push(...err.failures);
      return undefined;
    }
  };
  const perPage = collect(() => integerParam(q.per_page, 'per_page', ACTIVITY_PER_PAGE.default, 1, ACTIVITY_PER_PAGE.max));
  const page = collect(() => integerParam(q.page, 'page', 1, 1, Number.MAX_SAFE_INTEGER));
  const values: Partial<Record<(typeof FILTERS)[number], string>> = {};
  for (const key of FILTERS) {
    const value = given(filters[key]);
    if (value === undefined) continue;
    const field = `filter.${key}`;
    const name = `filter.${key.replace(/_/g, ' ')}`;
    if (typeof value !== 'string') failures.push({ field, rule: 'string', detail: `The ${name} field must be a string.` });
    else if (value.includes('\u0000'))
      failures.push({ field, rule: 'regex', detail: `The ${name} field must not contain NUL characters.` });
    else values[key] = value;
  }
  const actor = values.actor_id;
  if (actor !== undefined && actor.toLowerCase() !== 'system' && !UUID.test(actor)) {
    failures.push({
      field: 'filter.actor_id',
      rule: 'uuid',
      detail: 'The filter.actor id field must be a valid UUID or "system".',
    });
  }
  if (failures.length > 0) throw new ValidationError(failures);

  return {
    page: page!,
    perPage: perPage!,
    ascending: sort === 'timestamp',
    ...(values.event !== undefined ? { event: values.event } : {}),
    ...(values.ip !== undefined ? { ip: values.ip } : {}),
    ...(actor !== undefined ? { actor: actor.toLowerCase() } : {}),
  };
}
