/**
 * "New database": the button (disabled with the reason when the server's
 * database limit is reached or 0, or the user may not create one) and its
 * dialog asking for the name and where connections may come from.
 */
import { useState } from 'preact/hooks';
import { useCreateDatabase } from '../../api/databases';
import { useServer } from '../../lib/server-context';
import { ConfirmDialog } from '../ui';

/** Why a new database cannot be created now, or null when it can. */
export function createDatabaseBlocked(count: number, limit: number, allowed: boolean): string | null {
  if (limit === 0) return 'This server cannot have databases.';
  if (!allowed) return 'You may not create databases on this server.';
  if (count >= limit) return `This server has reached its limit of ${limit} database${limit === 1 ? '' : 's'}.`;
  return null;
}

export function CreateDatabase({ count, limit }: { count: number; limit: number }) {
  const { id, permissions } = useServer();
  const create = useCreateDatabase(id);
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [remote, setRemote] = useState('%');
  const blocked = createDatabaseBlocked(count, limit, permissions.can('database.create'));
  const close = () => {
    setOpen(false);
    setName('');
    setRemote('%');
  };
  return (
    <div class="actions">
      <p class="muted" id="database-usage">
        {limit > 0 && `${count} of ${limit} databases.`}
        {blocked && <span id="create-database-reason"> {blocked}</span>}
      </p>
      <button
        type="button"
        class="primary"
        aria-describedby={blocked ? 'create-database-reason' : undefined}
        disabled={blocked !== null}
        onClick={() => {
          create.reset();
          setOpen(true);
        }}
      >
        New database
      </button>
      <ConfirmDialog
        open={open}
        title="New database"
        confirmLabel="Create database"
        busy={create.isPending}
        error={create.error}
        onCancel={close}
        onConfirm={() => create.mutate({ database: name.trim(), remote: remote.trim() || '%' }, { onSuccess: close })}
      >
        <label>
          Database name
          <input
            value={name}
            required
            minLength={3}
            maxLength={48}
            pattern="[A-Za-z0-9_\-]+"
            aria-describedby="database-name-hint"
            onInput={(event) => setName(event.currentTarget.value)}
          />
        </label>
        <p class="muted small" id="database-name-hint">
          3 to 48 letters, digits, dashes or underscores; the server's number is put in front of it.
        </p>
        <label>
          Connections from
          <input
            class="mono"
            value={remote}
            maxLength={253}
            pattern="[0-9.%]+"
            aria-describedby="database-remote-hint"
            onInput={(event) => setRemote(event.currentTarget.value)}
          />
        </label>
        <p class="muted small" id="database-remote-hint">
          The addresses the database may be used from: <span class="mono">%</span> for anywhere, or an IP address with{' '}
          <span class="mono">%</span> as a wildcard.
        </p>
      </ConfirmDialog>
    </div>
  );
}
