import { timingSafeEqual } from 'node:crypto';

/**
 * The sign-in cookies (docs/reference/web-console.md, docs/DECISIONS.md "Sign-in for people"): the
 * session's token, HttpOnly, and the CSRF token, readable by the page's
 * script, which sends it back as `X-XSRF-TOKEN` (the names Laravel and Axios
 * use).
 */
export const SESSION_COOKIE = 'quetzal_session';
export const XSRF_COOKIE = 'XSRF-TOKEN';
export const XSRF_HEADER = 'x-xsrf-token';

/** Methods that change something: a request authenticated by the cookie must carry the CSRF token. */
export const MUTATING_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The first value of cookie `name` in a `Cookie` header; undefined when absent. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq === -1 || pair.slice(0, eq).trim() !== name) continue;
    const value = pair.slice(eq + 1).trim();
    return value.startsWith('"') && value.endsWith('"') && value.length >= 2 ? value.slice(1, -1) : value;
  }
  return undefined;
}

/**
 * Whether the cookies are `Secure`: when APP_URL, the address people use, is
 * https (behind a TLS-terminating proxy too), so that a browser never sends
 * them over plain http; on an http APP_URL a Secure cookie would never come
 * back and nobody could stay signed in.
 */
export function cookiesSecure(appUrl: string): boolean {
  return /^https:/i.test(appUrl.trim());
}

export interface CookieOptions {
  httpOnly: boolean;
  secure: boolean;
  /** Seconds; 0 removes the cookie. */
  maxAge: number;
}

/** A `Set-Cookie` value, always `Path=/` and `SameSite=Lax`. The value is sent as it is: callers pass URL-safe tokens. */
export function cookieHeader(name: string, value: string, options: CookieOptions): string {
  const parts = [`${name}=${value}`, 'Path=/', `Max-Age=${options.maxAge}`];
  if (options.maxAge === 0) parts.push('Expires=Thu, 01 Jan 1970 00:00:00 GMT');
  if (options.httpOnly) parts.push('HttpOnly');
  if (options.secure) parts.push('Secure');
  parts.push('SameSite=Lax');
  return parts.join('; ');
}

/** Whether a request's CSRF header carries `expected`, compared in constant time. */
export function csrfTokenMatches(header: string | string[] | undefined, expected: string): boolean {
  if (typeof header !== 'string') return false;
  const given = Buffer.from(header);
  const wanted = Buffer.from(expected);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}
