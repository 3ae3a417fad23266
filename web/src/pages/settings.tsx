import { useEffect, useState } from 'preact/hooks';
import { useSignedInUser } from '../api/session';
import { useReinstallServer, useRenameServer } from '../api/startup';
import { ConfirmDialog, ErrorText } from '../components/ui';
import { useServer } from '../lib/server-context';

/** Settings (docs/reference/eggs-and-installs.md): rename, SFTP details, reinstall with a confirmation. */
export function SettingsSection() {
  const { id, server, permissions } = useServer();
  const user = useSignedInUser();
  const attributes = server.attributes;
  const rename = useRenameServer(id);
  const reinstall = useReinstallServer(id);
  const [name, setName] = useState(attributes.name);
  const [description, setDescription] = useState(attributes.description ?? '');
  const [confirming, setConfirming] = useState(false);
  useEffect(() => setName(attributes.name), [attributes.name]);
  useEffect(() => setDescription(attributes.description ?? ''), [attributes.description]);
  const canRename = permissions.can('settings.rename');
  const sftp = attributes.sftp_details;

  return (
    <>
      <form
        class="card stack"
        aria-labelledby="rename-title"
        onSubmit={(event) => {
          event.preventDefault();
          rename.mutate({ name: name.trim(), description });
        }}
      >
        <h3 id="rename-title">Name and description</h3>
        <label>
          Server name
          <input value={name} maxLength={191} disabled={!canRename} onInput={(event) => setName(event.currentTarget.value)} />
        </label>
        <label>
          Description
          <textarea
            rows={3}
            value={description}
            disabled={!canRename}
            onInput={(event) => setDescription(event.currentTarget.value)}
          />
        </label>
        <ErrorText error={rename.error} />
        <div class="actions">
          {rename.isSuccess && !rename.isPending && (
            <span class="muted" role="status">
              Saved
            </span>
          )}
          <button type="submit" class="primary" disabled={!canRename || rename.isPending}>
            Save name
          </button>
        </div>
      </form>

      <section class="card stack" aria-labelledby="sftp-title">
        <h3 id="sftp-title">SFTP details</h3>
        {sftp && sftp.port > 0 ? (
          <dl class="details">
            <dt>Server address</dt>
            <dd class="mono">{`sftp://${sftp.ip}:${sftp.port}`}</dd>
            <dt>Username</dt>
            <dd class="mono">{`${user.username}.${attributes.identifier}`}</dd>
          </dl>
        ) : (
          <p class="muted">SFTP is turned off on this panel.</p>
        )}
        <p class="muted small">Sign in with your panel password.</p>
      </section>

      <section class="card stack" aria-labelledby="reinstall-title">
        <h3 id="reinstall-title">Reinstall server</h3>
        <p>
          Reinstalling stops the server and runs its egg's install script again. Some files may be deleted or changed by the
          script: back up what you need first.
        </p>
        {reinstall.isSuccess && (
          <p role="status" class="notice">
            The server is reinstalling; its output shows in the console.
          </p>
        )}
        <div class="actions">
          <button
            type="button"
            class="danger"
            disabled={!permissions.can('settings.reinstall') || reinstall.isPending}
            onClick={() => {
              reinstall.reset();
              setConfirming(true);
            }}
          >
            Reinstall server
          </button>
        </div>
      </section>
      <ConfirmDialog
        open={confirming}
        title="Reinstall this server?"
        confirmLabel="Yes, reinstall"
        danger
        busy={reinstall.isPending}
        error={reinstall.error}
        onCancel={() => setConfirming(false)}
        onConfirm={() => reinstall.mutate(undefined, { onSuccess: () => setConfirming(false) })}
      >
        <p>The server is stopped and its install script runs again on its files.</p>
      </ConfirmDialog>
    </>
  );
}
