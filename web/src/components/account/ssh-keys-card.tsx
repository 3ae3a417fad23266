/** The account's SSH keys (used by SFTP): the list with fingerprints, adding one, removing one. */
import { useState } from 'preact/hooks';
import { useAddSshKey, useRemoveSshKey, useSshKeys, type SshKey } from '../../api/account';
import { dateTime } from '../../lib/format';
import { ConfirmDialog, ErrorText, Loading } from '../ui';

export function SshKeysCard() {
  const keys = useSshKeys();
  const remove = useRemoveSshKey();
  const [removing, setRemoving] = useState<SshKey | null>(null);
  return (
    <section aria-labelledby="ssh-keys-title">
      <h2 id="ssh-keys-title">SSH keys</h2>
      <p class="muted">A key added here signs you in to SFTP without your password.</p>
      <NewSshKeyForm />
      {keys.isPending && <Loading what="SSH keys" />}
      <ErrorText error={keys.error} />
      {keys.data?.length === 0 && <p class="muted">No SSH keys.</p>}
      {keys.data && keys.data.length > 0 && (
        <ul class="rows" aria-label="SSH keys">
          {keys.data.map((key) => (
            <li key={key.fingerprint} class="card row">
              <div class="row-main">
                <span class="row-title">{key.name}</span>
                <span class="mono small fingerprint">{key.fingerprint}</span>
                <span class="muted small">Added {dateTime(key.created_at)}</span>
              </div>
              <div class="row-actions">
                <button
                  type="button"
                  class="danger"
                  aria-label={`Remove SSH key ${key.name}`}
                  onClick={() => {
                    remove.reset();
                    setRemoving(key);
                  }}
                >
                  Remove
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
      <ConfirmDialog
        open={removing !== null}
        title={`Remove the SSH key ${removing?.name ?? ''}?`}
        confirmLabel="Remove"
        danger
        busy={remove.isPending}
        error={remove.error}
        onConfirm={() => {
          if (removing) remove.mutate(removing.fingerprint, { onSuccess: () => setRemoving(null) });
        }}
        onCancel={() => setRemoving(null)}
      >
        <p>SFTP sessions signed in with it end, and it no longer signs you in.</p>
      </ConfirmDialog>
    </section>
  );
}

function NewSshKeyForm() {
  const add = useAddSshKey();
  const [name, setName] = useState('');
  const [publicKey, setPublicKey] = useState('');
  return (
    <form
      class="card stack"
      aria-labelledby="new-ssh-key-title"
      onSubmit={(event) => {
        event.preventDefault();
        add.mutate(
          { name: name.trim(), publicKey: publicKey.trim() },
          {
            onSuccess: () => {
              setName('');
              setPublicKey('');
            },
          },
        );
      }}
    >
      <h3 id="new-ssh-key-title">Add an SSH key</h3>
      <label>
        Key name
        <input required maxLength={191} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <label>
        Public key
        <textarea
          class="mono"
          rows={3}
          required
          spellcheck={false}
          placeholder="ssh-ed25519 AAAA… you@host"
          value={publicKey}
          onInput={(e) => setPublicKey(e.currentTarget.value)}
        />
      </label>
      <ErrorText error={add.error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={add.isPending}>
          Add SSH key
        </button>
      </div>
    </form>
  );
}
