/**
 * The one way the console talks to the panel: the public client API and the
 * session routes, same origin, with the session cookie. Every mutating request
 * carries the CSRF token (docs/reference/web-console.md); every error becomes an ApiError whose
 * message is the API's own `errors[0].detail`.
 */

export interface ApiErrorItem {
  code: string;
  status: string;
  detail: string;
  meta?: { source_field?: string; rule?: string };
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: readonly ApiErrorItem[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

const XSRF_COOKIE = 'XSRF-TOKEN';
let csrfFromSession: string | null = null;
let onSignedOut: (() => void) | null = null;

/** The token /auth/session handed out; the XSRF-TOKEN cookie wins when present (it follows rotations). */
export function rememberCsrfToken(token: string | null): void {
  csrfFromSession = token;
}

/** Called when the API says the session is gone (401), so the app shows the sign-in form again. */
export function whenSignedOut(handler: () => void): void {
  onSignedOut = handler;
}

/** The CSRF token for a mutating request made outside request() (an upload's XMLHttpRequest). */
export function csrfToken(): string | null {
  for (const part of document.cookie.split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === XSRF_COOKIE) return decodeURIComponent(value.join('='));
  }
  return csrfFromSession;
}

async function errorOf(response: Response): Promise<ApiError> {
  let errors: ApiErrorItem[] = [];
  try {
    const body: unknown = await response.json();
    if (body && typeof body === 'object' && Array.isArray((body as { errors?: unknown }).errors)) {
      errors = (body as { errors: ApiErrorItem[] }).errors;
    }
  } catch {
    // Not JSON (a proxy's page): the status says what there is to say.
  }
  const detail = errors[0]?.detail;
  return new ApiError(response.status, detail || `The panel answered ${response.status} ${response.statusText}.`.trim(), errors);
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as it is (a file's text for POST /files/write) instead of as JSON. */
  rawBody?: string | Blob;
  /** The answer's body as text (GET /files/contents), not parsed as JSON. */
  text?: boolean;
  /** A 401 here is an answer, not a lost session (signing in, reading the session). */
  quietUnauthenticated?: boolean;
  signal?: AbortSignal;
}

export async function request<T>(method: string, url: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: options.text ? '*/*' : 'application/json' };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.rawBody !== undefined) headers['content-type'] = 'text/plain';
  if (method !== 'GET' && method !== 'HEAD') {
    const token = csrfToken();
    if (token) headers['x-xsrf-token'] = token;
  }
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers,
      credentials: 'same-origin',
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      ...(options.rawBody !== undefined ? { body: options.rawBody } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'The panel could not be reached. Check your connection and try again.');
  }
  if (!response.ok) {
    const error = await errorOf(response);
    if (response.status === 401 && !options.quietUnauthenticated) onSignedOut?.();
    throw error;
  }
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  if (options.text) return text as T;
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

export const get = <T>(url: string, signal?: AbortSignal) => request<T>('GET', url, signal ? { signal } : {});
export const post = <T = void>(url: string, body?: unknown) => request<T>('POST', url, body === undefined ? {} : { body });
export const put = <T = void>(url: string, body?: unknown) => request<T>('PUT', url, { body });
export const del = (url: string) => request<void>('DELETE', url);

/** A query string from the members that are set. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params))
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** The message to show for anything a request threw. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
