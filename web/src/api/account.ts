/**
 * Every HTTP call of the account page (docs/reference/web-console.md, docs/ACCOUNT.md): API keys,
 * password, email, two-factor, SSH keys and the account's own activity, each
 * with its TanStack Query hook and the caches it makes stale, in one place. A
 * mutation's error is the API's own `errors[0].detail` (ApiError), shown
 * beside the control that caused it.
 */
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { del, get, post, put, query } from './client';
import { SESSION_KEY, useSession } from './session';
import type { ActivityEntry, ApiKey, Item, List } from './types';

const ACCOUNT_URL = '/api/client/account';
const accountUrl = (tail: string) => `${ACCOUNT_URL}/${tail}`;

/** Query keys: everything under ['account'], so one invalidation can reach all of them. */
export const accountKeys = {
  apiKeys: ['account', 'api-keys'] as const,
  sshKeys: ['account', 'ssh-keys'] as const,
  activity: ['account', 'activity'] as const,
  activityPage: (page: number) => ['account', 'activity', page] as const,
};

/** After a change: these queries are stale (each change also writes an account event, so activity is too). */
function useInvalidate(...keys: (readonly string[])[]) {
  const client = useQueryClient();
  return () =>
    Promise.all([accountKeys.activity, ...keys].map((queryKey) => client.invalidateQueries({ queryKey }))).then(() => undefined);
}

// ---- API keys ----

export function useApiKeys() {
  return useQuery({
    queryKey: accountKeys.apiKeys,
    queryFn: async ({ signal }) => {
      const list = await get<List<Item<'api_key', ApiKey>>>(accountUrl('api-keys'), signal);
      return list.data.map((item) => item.attributes);
    },
  });
}

/** A key just made: the whole bearer token, which the panel shows this once. */
export interface NewApiKey {
  identifier: string;
  token: string;
}

export function useCreateApiKey() {
  const invalidate = useInvalidate(accountKeys.apiKeys);
  return useMutation({
    mutationFn: async (input: { description: string; allowedIps: string[] }): Promise<NewApiKey> => {
      const created = await post<Item<'api_key', ApiKey> & { meta?: { secret_token?: string } }>(accountUrl('api-keys'), {
        description: input.description,
        allowed_ips: input.allowedIps,
      });
      const identifier = created.attributes.identifier;
      const secretToken = created.meta?.secret_token ?? '';
      // Pterodactyl's meta.secret_token is the part after the identifier; the key is both.
      return { identifier, token: secretToken.startsWith(identifier) ? secretToken : identifier + secretToken };
    },
    onSuccess: invalidate,
  });
}

export function useRevokeApiKey() {
  const invalidate = useInvalidate(accountKeys.apiKeys);
  return useMutation({
    mutationFn: (identifier: string) => del(accountUrl(`api-keys/${encodeURIComponent(identifier)}`)),
    onSuccess: invalidate,
  });
}

// ---- Password and email ----

export function useChangePassword() {
  const invalidate = useInvalidate();
  return useMutation({
    mutationFn: (input: { current: string; next: string; confirmation: string }) =>
      put(accountUrl('password'), {
        current_password: input.current,
        password: input.next,
        password_confirmation: input.confirmation,
      }),
    onSuccess: invalidate,
  });
}

/** PUT /account/email: the session's user (the header's "signed in as") carries the address. */
export function useChangeEmail() {
  const invalidate = useInvalidate(SESSION_KEY);
  return useMutation({
    mutationFn: (input: { email: string; password: string }) => put(accountUrl('email'), input),
    onSuccess: invalidate,
  });
}

// ---- Account activity ----

/** An account event's actor is the caller as they are now, with Pterodactyl's `2fa_enabled`. */
type AccountActivityEntry = Omit<ActivityEntry, 'relationships'> & {
  relationships: { actor: { attributes: { '2fa_enabled'?: boolean } | null } };
};

type ActivityList = List<{ attributes: AccountActivityEntry }> & {
  meta: { pagination: { total: number; current_page: number; total_pages: number } };
};

const ACTIVITY_PER_PAGE = 10;

export function useAccountActivity(page: number) {
  return useQuery({
    queryKey: accountKeys.activityPage(page),
    queryFn: async ({ signal }) => {
      const list = await get<ActivityList>(accountUrl(`activity${query({ page, per_page: ACTIVITY_PER_PAGE })}`), signal);
      return { entries: list.data.map((item) => item.attributes), pagination: list.meta.pagination };
    },
    // Turning a page keeps the one shown until the next arrives.
    placeholderData: keepPreviousData,
  });
}

/**
 * Whether two-factor is on: the session's user says (`use_totp`, as
 * Pterodactyl's page data has it), read again after every change to it.
 */
export function useTwoFactorEnabled() {
  const session = useSession();
  return { isPending: session.isPending, error: session.error, data: session.data?.user.use_totp === true };
}

// ---- Two-factor ----

export interface TwoFactorSetup {
  /** The otpauth:// URL an authenticator app reads from the QR code. */
  image_url_data: string;
  secret: string;
}

/**
 * GET /account/two-factor is not a plain read: each call makes a new pending
 * secret and drops the previous one. A mutation, so it runs once when the user
 * asks, never again on focus or remount while they are scanning the code.
 */
export function useStartTwoFactorSetup() {
  return useMutation({
    mutationFn: async () => {
      const answer = await get<{ data: TwoFactorSetup }>(accountUrl('two-factor'));
      const url = new URL(answer.data.image_url_data);
      // Pterodactyl 1.11 answers `secret` beside the URL; older ones only inside it.
      return { ...answer.data, secret: answer.data.secret || (url.searchParams.get('secret') ?? '') };
    },
  });
}

/** POST /account/two-factor: the ten recovery tokens come back this once. */
export function useEnableTwoFactor() {
  const changed = useInvalidate(SESSION_KEY);
  return useMutation({
    mutationFn: async (input: { code: string; password: string }) => {
      const answer = await post<{ attributes: { tokens: string[] } }>(accountUrl('two-factor'), input);
      return answer.attributes.tokens;
    },
    onSuccess: changed,
  });
}

export function useDisableTwoFactor() {
  const changed = useInvalidate(SESSION_KEY);
  return useMutation({
    mutationFn: (password: string) => post(accountUrl('two-factor/disable'), { password }),
    onSuccess: changed,
  });
}

// ---- SSH keys ----

export interface SshKey {
  name: string;
  /** OpenSSH's `SHA256:...`, as `ssh-keygen -l` prints it. */
  fingerprint: string;
  public_key: string;
  created_at: string;
}

export function useSshKeys() {
  return useQuery({
    queryKey: accountKeys.sshKeys,
    queryFn: async ({ signal }) => {
      const list = await get<List<Item<'ssh_key', SshKey>>>(accountUrl('ssh-keys'), signal);
      return list.data.map((item) => item.attributes);
    },
  });
}

export function useAddSshKey() {
  const invalidate = useInvalidate(accountKeys.sshKeys);
  return useMutation({
    mutationFn: (input: { name: string; publicKey: string }) =>
      post<Item<'ssh_key', SshKey>>(accountUrl('ssh-keys'), { name: input.name, public_key: input.publicKey }),
    onSuccess: invalidate,
  });
}

export function useRemoveSshKey() {
  const invalidate = useInvalidate(accountKeys.sshKeys);
  return useMutation({
    mutationFn: (fingerprint: string) => post(accountUrl('ssh-keys/remove'), { fingerprint }),
    onSuccess: invalidate,
  });
}
