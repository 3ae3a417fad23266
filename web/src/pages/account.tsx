import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'preact/hooks';
import { del, get, post, put } from '../api/client';
import { useSignedInUser } from '../api/session';
import type { ApiKey, Item, List } from '../api/types';
import { ConfirmDialog, ErrorText, Loading } from '../components/ui';
import { dateTime } from '../lib/format';

/** The user's own API keys (create, shown once; revoke) and password (docs/reference/web-console.md). */
export function AccountPage() {
  const user = useSignedInUser();
  return (
    <>
      <h1>Account</h1>
      <p class="muted">
        Signed in as <strong>{user.username}</strong> ({user.email}).
      </p>
      <ApiKeys />
      <ChangePassword />
    </>
  );
}

const KEYS_URL = '/api/client/account/api-keys';

function ApiKeys() {
  const client = useQueryClient();
  const keys = useQuery({
    queryKey: ['api-keys'],
    queryFn: ({ signal }) => get<List<Item<'api_key', ApiKey>>>(KEYS_URL, signal),
  });
  const [description, setDescription] = useState('');
  const [allowedIps, setAllowedIps] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [secret, setSecret] = useState<{ identifier: string; token: string } | null>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const [revokeError, setRevokeError] = useState<unknown>(null);

  const create = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const ips = allowedIps
        .split(/[\n,]/)
        .map((ip) => ip.trim())
        .filter(Boolean);
      const created = await post<Item<'api_key', ApiKey> & { meta?: { secret_token?: string } }>(KEYS_URL, {
        description: description.trim(),
        allowed_ips: ips,
      });
      const identifier = created.attributes.identifier;
      const secretToken = created.meta?.secret_token ?? '';
      // Pterodactyl's meta.secret_token is the part after the identifier; the key is both.
      setSecret({ identifier, token: secretToken.startsWith(identifier) ? secretToken : identifier + secretToken });
      setDescription('');
      setAllowedIps('');
      await client.invalidateQueries({ queryKey: ['api-keys'] });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const revoke = async () => {
    if (!revoking) return;
    setRevokeError(null);
    try {
      await del(`${KEYS_URL}/${encodeURIComponent(revoking.identifier)}`);
      setRevoking(null);
      if (secret?.identifier === revoking.identifier) setSecret(null);
      await client.invalidateQueries({ queryKey: ['api-keys'] });
    } catch (err) {
      setRevokeError(err);
    }
  };

  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <p class="muted">
        A key lets scripts and bots use the client API as you: send it as <code>Authorization: Bearer &lt;key&gt;</code>.
      </p>
      {secret && (
        <div class="card secret" role="status">
          <p>
            <strong>Your new API key.</strong> Copy it now: it is shown only once.
          </p>
          <label>
            Your new API key
            <input class="mono" readOnly value={secret.token} onFocus={(e) => e.currentTarget.select()} />
          </label>
          <div class="actions">
            <button type="button" onClick={() => void navigator.clipboard?.writeText(secret.token)}>
              Copy
            </button>
            <button type="button" onClick={() => setSecret(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <form class="card stack" aria-labelledby="new-key-title" onSubmit={(event) => void create(event)}>
        <h3 id="new-key-title">New API key</h3>
        <label>
          Description
          <input required maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </label>
        <label>
          Allowed IPs (one per line; empty allows any)
          <textarea class="mono" rows={2} value={allowedIps} onInput={(e) => setAllowedIps(e.currentTarget.value)} />
        </label>
        <ErrorText error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Create API key
          </button>
        </div>
      </form>
      {keys.isPending && <Loading what="API keys" />}
      <ErrorText error={keys.error} />
      {keys.data?.data.length === 0 && <p class="muted">No API keys.</p>}
      {keys.data && keys.data.data.length > 0 && (
        <ul class="rows" aria-label="API keys">
          {keys.data.data.map(({ attributes: key }) => (
            <li key={key.identifier} class="card row">
              <div class="row-main">
                <span class="row-title">{key.description || 'No description'}</span>
                <span class="mono muted">{key.identifier}</span>
                <span class="muted small">
                  {key.allowed_ips.length > 0 ? `Only from ${key.allowed_ips.join(', ')}` : 'From any IP'} · created{' '}
                  {dateTime(key.created_at)} · last used {key.last_used_at ? dateTime(key.last_used_at) : 'never'}
                </span>
              </div>
              <div class="row-actions">
                <button
                  type="button"
                  class="danger"
                  aria-label={`Revoke API key ${key.identifier}`}
                  onClick={() => {
                    setRevokeError(null);
                    setRevoking(key);
                  }}
                >
                  Revoke
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
      <ConfirmDialog
        open={revoking !== null}
        title={`Revoke the key ${revoking?.identifier ?? ''}?`}
        confirmLabel="Revoke"
        danger
        error={revokeError}
        onConfirm={() => void revoke()}
        onCancel={() => setRevoking(null)}
      >
        <p>Anything using it stops working at once.</p>
      </ConfirmDialog>
    </section>
  );
}

function ChangePassword() {
  const user = useSignedInUser();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [confirmation, setConfirmation] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setDone(false);
    try {
      await put('/api/client/account/password', {
        current_password: current,
        password: next,
        password_confirmation: confirmation,
      });
      setCurrent('');
      setNext('');
      setConfirmation('');
      setDone(true);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="password-title">
      <h2 id="password-title">Change password</h2>
      <form class="card stack" onSubmit={(event) => void submit(event)}>
        <input type="text" name="username" autocomplete="username" value={user.username} readOnly hidden />
        <label>
          Current password
          <input
            type="password"
            autocomplete="current-password"
            required
            value={current}
            onInput={(e) => setCurrent(e.currentTarget.value)}
          />
        </label>
        <label>
          New password
          <input
            type="password"
            autocomplete="new-password"
            required
            value={next}
            onInput={(e) => setNext(e.currentTarget.value)}
          />
        </label>
        <label>
          Confirm new password
          <input
            type="password"
            autocomplete="new-password"
            required
            value={confirmation}
            onInput={(e) => setConfirmation(e.currentTarget.value)}
          />
        </label>
        <ErrorText error={error} />
        {done && (
          <p role="status" class="success">
            Your password has been changed.
          </p>
        )}
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Change password
          </button>
        </div>
      </form>
    </section>
  );
}
