import { type QueryClient, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ApiError, post, rememberCsrfToken, request } from './client';
import type { User } from './types';

/** The signed-in user, from the session routes (docs/reference/web-console.md): null when signed out. */
export interface Session {
  user: User;
  csrf_token: string;
}

export const SESSION_KEY = ['session'] as const;

/** The service sets the readable XSRF-TOKEN cookie with every session: without it there is none to ask about. */
function mayBeSignedIn(): boolean {
  return /(?:^|;\s*)XSRF-TOKEN=/.test(document.cookie);
}

async function readSession(): Promise<Session | null> {
  // Asking without a session would be answered 401, which the browser logs as an error on every
  // fresh page load: a page with no session cookie is signed out without asking.
  if (!mayBeSignedIn()) return null;
  try {
    const body = await request<{ data: Session }>('GET', '/auth/session', { quietUnauthenticated: true });
    rememberCsrfToken(body.data.csrf_token ?? null);
    return body.data;
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      rememberCsrfToken(null);
      return null;
    }
    throw err;
  }
}

export function useSession() {
  return useQuery({ queryKey: SESSION_KEY, queryFn: readSession, staleTime: Infinity, retry: 1 });
}

export function useSignedInUser(): User {
  const { data } = useSession();
  if (!data) throw new Error('useSignedInUser outside a session');
  return data.user;
}

export interface SignInAnswer {
  complete: boolean;
  intended?: string;
  /** complete: false (two-factor): what POST /auth/login/checkpoint completes the sign-in with. */
  confirmation_token?: string;
}

async function signIn(user: string, password: string): Promise<SignInAnswer> {
  const body = await request<{ data: SignInAnswer }>('POST', '/auth/login', {
    body: { user, password },
    quietUnauthenticated: true,
  });
  return body.data;
}

/** The second step of a two-factor sign-in: a code from the authenticator, or one of the recovery tokens. */
async function completeSignIn(
  confirmationToken: string,
  answer: { code: string } | { recoveryToken: string },
): Promise<SignInAnswer> {
  const body = await request<{ data: SignInAnswer }>('POST', '/auth/login/checkpoint', {
    body:
      'code' in answer
        ? { confirmation_token: confirmationToken, authentication_code: answer.code }
        : { confirmation_token: confirmationToken, recovery_token: answer.recoveryToken },
    quietUnauthenticated: true,
  });
  return body.data;
}

/** Signed in: the session query asks again, and the page asked for stays where it is (a deep link survives). */
function useSignedIn() {
  const client = useQueryClient();
  return () => client.invalidateQueries({ queryKey: SESSION_KEY });
}

/** POST /auth/login: signed in, or (two-factor) the confirmation token the next step needs. */
export function useSignIn() {
  const signedIn = useSignedIn();
  return useMutation({
    mutationFn: ({ user, password }: { user: string; password: string }) => signIn(user.trim(), password),
    onSuccess: (answer) => (answer.complete || !answer.confirmation_token ? signedIn() : undefined),
  });
}

/** POST /auth/login/checkpoint with the authenticator's code or a recovery token. */
export function useCompleteSignIn(confirmationToken: string) {
  const signedIn = useSignedIn();
  return useMutation({
    mutationFn: (answer: { code: string } | { recoveryToken: string }) =>
      completeSignIn(
        confirmationToken,
        'code' in answer ? { code: answer.code.trim() } : { recoveryToken: answer.recoveryToken.trim() },
      ),
    onSuccess: () => signedIn(),
  });
}

/**
 * Signed out: the session query answers null (its observers see it now, so the sign-in form shows)
 * and every other cached answer goes. clear() would also drop the session query itself, leaving
 * its observer on a query no longer in the cache, still showing the signed-in pages.
 */
export function forgetSignedInData(client: QueryClient): void {
  client.setQueryData(SESSION_KEY, null);
  client.removeQueries({ predicate: (query) => query.queryKey[0] !== SESSION_KEY[0] });
}

export function useSignOut() {
  const client = useQueryClient();
  return async () => {
    // The request takes its CSRF token now; the console forgets the user at once, not after the
    // answer, so nothing signed-in stays on screen while the panel answers.
    const done = post('/auth/logout');
    rememberCsrfToken(null);
    forgetSignedInData(client);
    try {
      await done;
    } catch {
      // Already signed out (401) or unreachable: the console has forgotten the session either way.
    }
  };
}
