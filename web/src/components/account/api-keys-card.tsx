/** The account's API keys: a new key (its token shown once), the list, and revoking one. */
import { useState } from 'preact/hooks';
import { useApiKeys, useCreateApiKey, useRevokeApiKey, type NewApiKey } from '../../api/account';
import type { ApiKey } from '../../api/types';
import { dateTime } from '../../lib/format';
import { ConfirmDialog, ErrorText, Loading } from '../ui';

export function ApiKeysCard() {
  const keys = useApiKeys();
  const create = useCreateApiKey();
  const revoke = useRevokeApiKey();
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const shown = create.data;

  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <p class="muted">
        A key lets scripts and bots use the client API as you: send it as <code>Authorization: Bearer &lt;key&gt;</code>.
      </p>
      {shown && <NewKeySecret secret={shown} onDone={() => create.reset()} />}
      <NewApiKeyForm create={create} />
      {keys.isPending && <Loading what="API keys" />}
      <ErrorText error={keys.error} />
      {keys.data?.length === 0 && <p class="muted">No API keys.</p>}
      {keys.data && keys.data.length > 0 && (
        <ul class="rows" aria-label="API keys">
          {keys.data.map((key) => (
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
                    revoke.reset();
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
        busy={revoke.isPending}
        error={revoke.error}
        onConfirm={() => {
          if (!revoking) return;
          revoke.mutate(revoking.identifier, {
            onSuccess: () => {
              if (shown?.identifier === revoking.identifier) create.reset();
              setRevoking(null);
            },
          });
        }}
        onCancel={() => setRevoking(null)}
      >
        <p>Anything using it stops working at once.</p>
      </ConfirmDialog>
    </section>
  );
}

function NewKeySecret({ secret, onDone }: { secret: NewApiKey; onDone(): void }) {
  return (
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
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

function NewApiKeyForm({ create }: { create: ReturnType<typeof useCreateApiKey> }) {
  const [description, setDescription] = useState('');
  const [allowedIps, setAllowedIps] = useState('');
  return (
    <form
      class="card stack"
      aria-labelledby="new-key-title"
      onSubmit={(event) => {
        event.preventDefault();
        const ips = allowedIps
          .split(/[\n,]/)
          .map((ip) => ip.trim())
          .filter(Boolean);
        create.mutate(
          { description: description.trim(), allowedIps: ips },
          {
            onSuccess: () => {
              setDescription('');
              setAllowedIps('');
            },
          },
        );
      }}
    >
      <h3 id="new-key-title">New API key</h3>
      <label>
        Description
        <input required maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      </label>
      <label>
        Allowed IPs (one per line; empty allows any)
        <textarea class="mono" rows={2} value={allowedIps} onInput={(e) => setAllowedIps(e.currentTarget.value)} />
      </label>
      <ErrorText error={create.error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={create.isPending}>
          Create API key
        </button>
      </div>
    </form>
  );
}
