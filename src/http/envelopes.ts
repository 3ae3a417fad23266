/** The Pterodactyl wire envelopes (docs/reference/api.md#wire-conventions): items, lists and pagination meta. */
export interface Item<A = Record<string, unknown>> {
  object: string;
  attributes: A;
}

export function item<A>(object: string, attributes: A): Item<A> {
  return { object, attributes };
}

export function list<T>(data: T[]): { object: 'list'; data: T[] } {
  return { object: 'list', data };
}

export interface Pagination {
  total: number;
  count: number;
  per_page: number;
  current_page: number;
  total_pages: number;
  links: { previous?: string; next?: string };
}

/**
 * Pagination meta. Links are absolute URLs that keep the request's other query
 * parameters (`rawQuery` is the request's query string without the `?`).
 */
export function pagination(args: {
  total: number;
  count: number;
  perPage: number;
  page: number;
  baseUrl: string;
  path: string;
  rawQuery: string;
}): Pagination {
  const totalPages = Math.max(1, Math.ceil(args.total / args.perPage));
  const links: Pagination['links'] = {};
  const linkTo = (page: number) => {
    const params = new URLSearchParams(args.rawQuery);
    params.set('page', String(page));
    return `${args.baseUrl}${args.path}?${params.toString()}`;
  };
  if (args.page > 1) links.previous = linkTo(args.page - 1);
  if (args.page < totalPages) links.next = linkTo(args.page + 1);
  return {
    total: args.total,
    count: args.count,
    per_page: args.perPage,
    current_page: args.page,
    total_pages: totalPages,
    links,
  };
}

/**
 * A page of a listing in the list envelope, with its pagination meta (links
 * relative to the request's `url`) and any further meta members after it.
 */
export function paginatedList<T, Meta extends object = Record<never, never>>(
  data: T[],
  page: { total: number; page: number; perPage: number },
  request: { url: string; baseUrl: string },
  moreMeta?: Meta,
) {
  const [path = '', rawQuery = ''] = request.url.split('?');
  return {
    ...list(data),
    meta: {
      pagination: pagination({
        total: page.total,
        count: data.length,
        perPage: page.perPage,
        page: page.page,
        baseUrl: request.baseUrl,
        path,
        rawQuery,
      }),
      ...moreMeta,
    },
  };
}
