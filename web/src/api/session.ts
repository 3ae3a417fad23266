import { useQuery, useQueryClient } from '@tanstack/react-query';
import { ApiError, post, rememberCsrfToken, request } from './client';
import type { User } from './types';

/** The signed-in user, from the session routes (SPEC 12): null when signed out. */
export interface Session {
  user: User;
  csrf_token: string;
}

export const SESSION_KEY = ['session'] as const;

async function readSession(): Promise<Session | null> {
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

export async function signIn(user: string, password: string): Promise<SignInAnswer> {
  const body = await request<{ data: SignInAnswer }>('POST', '/auth/login', {
    body: { user, password },
    quietUnauthenticated: true,
  });
  return body.data;
}

/** The second step of a two-factor sign-in: a code from the authenticator, or one of the recovery tokens. */
export async function completeSignIn(
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

export function useSignOut() {
  const client = useQueryClient();
  // Signed out in the page at once (the sign-in form, no signed-in data left in the cache), then told to the service.
  return async () => {
    client.removeQueries({ predicate: (query) => query.queryKey[0] !== SESSION_KEY[0] });
    client.setQueryData(SESSION_KEY, null);
    try {
      await post('/auth/logout');
    } finally {
      rememberCsrfToken(null);
    }
  };
}
