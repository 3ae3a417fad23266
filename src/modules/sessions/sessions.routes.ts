import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppDeps } from '../../deps.js';
import { cookieHeader, cookiesSecure, readCookie, SESSION_COOKIE, XSRF_COOKIE, XSRF_HEADER } from '../../http/cookies.js';
import { forbidden, unauthenticated } from '../../http/errors.js';
import { normaliseBody } from '../../http/routes.js';
import { accountAttributes } from '../account/account.transformer.js';
import { CheckpointBody, SignInBody } from './sessions.schemas.js';
import { passCheckpoint } from './sessions.checkpoint.js';
import { currentSession, signOut } from './sessions.service.js';
import { completeSignIn, signIn } from './sessions.sign-in.js';
import { SignInThrottledError } from './sessions.throttle.js';

/**
 * Sign-in for people (docs/reference/web-console.md; docs/DECISIONS.md "Sign-in for people"), at
 * Pterodactyl's paths outside /api/client. The session travels in an HttpOnly
 * cookie; its CSRF token in a readable `XSRF-TOKEN` cookie (and in the
 * answers' bodies), which mutating requests send back as `X-XSRF-TOKEN`.
 */
export function registerSessionRoutes(
  app: FastifyInstance,
  deps: Pick<AppDeps, 'db' | 'clock' | 'config'> & { appKey: Uint8Array },
) {
  const secure = cookiesSecure(deps.config.appUrl);
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();

  const setCookies = (reply: FastifyReply, session: { token: string; csrfToken: string; expiresAt: number }) => {
    const maxAge = Math.max(0, Math.ceil((session.expiresAt - deps.clock.now()) / 1000));
    reply.header('set-cookie', [
      cookieHeader(SESSION_COOKIE, session.token, { httpOnly: true, secure, maxAge }),
      cookieHeader(XSRF_COOKIE, session.csrfToken, { httpOnly: false, secure, maxAge }),
    ]);
  };
  const clearCookies = (reply: FastifyReply) => {
    reply.header('set-cookie', [
      cookieHeader(SESSION_COOKIE, '', { httpOnly: true, secure, maxAge: 0 }),
      cookieHeader(XSRF_COOKIE, '', { httpOnly: false, secure, maxAge: 0 }),
    ]);
  };

  routes.route({
    method: 'POST',
    url: '/auth/login',
    schema: { summary: 'Sign in with a username or email and a password; sets the session cookies', body: SignInBody },
    onRequest: refuseCrossSite,
    preValidation: normaliseBody,
    handler: async (request, reply) => {
      let session;
      try {
        session = await signIn(deps.db, {
          user: request.body.user,
          password: request.body.password,
          ip: request.ip,
          userAgent: request.headers['user-agent'],
          previousToken: readCookie(request.headers.cookie, SESSION_COOKIE),
          now: deps.clock.now(),
        });
      } catch (err) {
        if (err instanceof SignInThrottledError) reply.header('Retry-After', err.retryAfterSeconds);
        throw err;
      }
      if (!session.complete) return { data: { complete: false, confirmation_token: session.confirmationToken } };
      setCookies(reply, session);
      return { data: { complete: true, intended: '/', user: accountAttributes(session.user) } };
    },
  });

  routes.route({
    method: 'POST',
    url: '/auth/login/checkpoint',
    schema: {
      summary: 'Complete a two-factor sign-in with a TOTP code or a recovery token; sets the session cookies',
      body: CheckpointBody,
    },
    onRequest: refuseCrossSite,
    preValidation: normaliseBody,
    handler: async (request, reply) => {
      const now = deps.clock.now();
      let user;
      try {
        user = await passCheckpoint(deps, {
          confirmationToken: request.body.confirmation_token,
          authenticationCode: request.body.authentication_code,
          recoveryToken: request.body.recovery_token,
          ip: request.ip,
          now,
        });
      } catch (err) {
        if (err instanceof SignInThrottledError) reply.header('Retry-After', err.retryAfterSeconds);
        throw err;
      }
      const session = await completeSignIn(deps.db, user, {
        ip: request.ip,
        userAgent: request.headers['user-agent'],
        previousToken: readCookie(request.headers.cookie, SESSION_COOKIE),
        now,
      });
      setCookies(reply, session);
      return { data: { complete: true, intended: '/', user: accountAttributes(session.user) } };
    },
  });

  routes.route({
    method: 'GET',
    url: '/auth/session',
    schema: { summary: "The session cookie's user (with use_totp) and CSRF token; 401 without a live session" },
    handler: async (request, reply) => {
      const token = readCookie(request.headers.cookie, SESSION_COOKIE);
      const session = token === undefined ? null : await currentSession(deps.db, token, request.ip, deps.clock.now());
      if (!session) {
        if (token !== undefined) clearCookies(reply);
        throw unauthenticated();
      }
      // `use_totp` as Pterodactyl's page data has it: the console's account page shows two-factor's state from it.
      return {
        data: {
          user: { ...accountAttributes(session.auth.user), use_totp: session.auth.user.use_totp === 1 },
          csrf_token: session.csrfToken,
        },
      };
    },
  });

  routes.route({
    method: 'POST',
    url: '/auth/logout',
    schema: { summary: 'Sign out: ends the session everywhere at once (needs X-XSRF-TOKEN)' },
    handler: async (request, reply) => {
      const token = readCookie(request.headers.cookie, SESSION_COOKIE);
      const outcome =
        token === undefined ? 'none' : await signOut(deps.db, token, request.headers[XSRF_HEADER], request.ip, deps.clock.now());
      if (outcome === 'csrf-mismatch') throw forbidden('CSRF token mismatch.');
      clearCookies(reply);
      if (outcome === 'none') throw unauthenticated();
      return reply.status(204).send();
    },
  });
}

/**
 * Another site may not sign a browser in (login CSRF): browsers say where a
 * request comes from in `Sec-Fetch-Site`. Scripts and old browsers send no such
 * header and are let through; the JSON body keeps plain HTML forms out too.
 */
async function refuseCrossSite(request: FastifyRequest) {
  if (request.headers['sec-fetch-site'] === 'cross-site') throw forbidden('Signing in from another site is not allowed.');
}
