import { randomBytes } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import type { UserRow } from '../../src/db/schema.js';
import { hashPassword } from '../../src/modules/users/passwords.js';
import type { Harness } from './harness.js';

/** An address of its own for each sign-in, so that the per-IP throttle of one test never meets another's. */
export const freshIp = () => `10.${randomBytes(3).join('.')}`;

/** A user (with an API key, as the factory makes them) who also has a password. */
export async function userWithPassword(
  h: Harness,
  password = 'correct horse battery',
): Promise<{ user: UserRow; token: string; password: string }> {
  const made = await h.make.user();
  await h.db.db
    .updateTable('users')
    .set({ password: await hashPassword(password) })
    .where('id', '=', made.user.id)
    .execute();
  return { ...made, password };
}

/** The cookies a response sets, by name: the value and the attributes as sent. */
export function setCookies(res: LightMyRequestResponse): Map<string, { value: string; attributes: string[]; raw: string }> {
  const header = res.headers['set-cookie'];
  const lines = header === undefined ? [] : Array.isArray(header) ? header : [header];
  const out = new Map<string, { value: string; attributes: string[]; raw: string }>();
  for (const raw of lines) {
    const [pair = '', ...attributes] = raw.split(';').map((s) => s.trim());
    const eq = pair.indexOf('=');
    out.set(pair.slice(0, eq), { value: pair.slice(eq + 1), attributes, raw });
  }
  return out;
}

export interface BrowserSession {
  token: string;
  csrf: string;
  /** A `Cookie` header value carrying both cookies, as a browser sends them. */
  cookie: string;
  response: LightMyRequestResponse;
}

export function login(h: Harness, body: object, ip = freshIp(), headers: Record<string, string> = {}) {
  return h.app.inject({ method: 'POST', url: '/auth/login', payload: body, remoteAddress: ip, headers });
}

/** Signs in and returns the cookies the browser would keep; throws unless the sign-in worked. */
export async function signIn(h: Harness, user: string, password: string, ip = freshIp()): Promise<BrowserSession> {
  const response = await login(h, { user, password }, ip);
  if (response.statusCode !== 200) throw new Error(`sign-in answered ${response.statusCode}: ${response.body}`);
  const cookies = setCookies(response);
  const token = cookies.get('quetzal_session')!.value;
  const csrf = cookies.get('XSRF-TOKEN')!.value;
  return { token, csrf, cookie: `quetzal_session=${token}; XSRF-TOKEN=${csrf}`, response };
}

/** A request a browser makes with its cookies (and the CSRF header when `csrf` is given). */
export function browserRequest(h: Harness, session: { cookie: string }, options: InjectOptions & { csrf?: string }) {
  const { csrf, ...rest } = options;
  return h.app.inject({
    ...rest,
    headers: { cookie: session.cookie, ...(csrf !== undefined ? { 'x-xsrf-token': csrf } : {}), ...(rest.headers ?? {}) },
  });
}
