/**
 * A database's connection details in a modal: endpoint, username, where
 * connections may come from, the password (read with `include=password` only
 * while this is open, for who holds `database.view_password`), the
 * JDBC-style connection string, and "Rotate password".
 */
import {
  connectionStringOf,
  endpointOf,
  passwordOf,
  useDatabasePasswords,
  useRotateDatabasePassword,
  type ServerDatabase,
} from '../../api/databases';
import { useServer } from '../../lib/server-context';
import { ErrorText, Modal } from '../ui';

interface DatabaseDetailsProps {
  /** The database shown; null: the dialog is closed. */
  database: ServerDatabase | null;
  onClose(): void;
}

export function DatabaseDetails({ database, onClose }: DatabaseDetailsProps) {
  return (
    <Modal open={database !== null} class="database-details" onCancel={onClose}>
      {(titleId) => (
        <>
          <h2 id={titleId}>Database connection details</h2>
          {database && <DetailsBody database={database} onClose={onClose} />}
        </>
      )}
    </Modal>
  );
}

function DetailsBody({ database, onClose }: { database: ServerDatabase; onClose(): void }) {
  const { id, permissions } = useServer();
  const mayViewPassword = permissions.can('database.view_password');
  const passwords = useDatabasePasswords(id, mayViewPassword);
  const rotate = useRotateDatabasePassword(id);
  const password = passwordOf(passwords.data?.find((item) => item.id === database.id));
  return (
    <div class="stack">
      <ReadOnlyField label="Endpoint" value={endpointOf(database)} />
      <ReadOnlyField label="Connections from" value={database.connections_from} />
      <ReadOnlyField label="Username" value={database.username} />
      {!mayViewPassword ? (
        <p class="muted small">You may not see this database's password.</p>
      ) : passwords.isPending ? (
        <p class="muted small" role="status">
          Loading the password…
        </p>
      ) : (
        <>
          <ErrorText error={passwords.error} />
          {password !== null && <ReadOnlyField label="Password" value={password} />}
        </>
      )}
      <ReadOnlyField label="JDBC connection string" value={connectionStringOf(database, password)} multiline />
      <ErrorText error={rotate.error} />
      <div class="actions">
        {rotate.isSuccess && !rotate.isPending && (
          <span class="muted" role="status">
            Password rotated
          </span>
        )}
        <button
          type="button"
          disabled={!permissions.can('database.update') || rotate.isPending}
          onClick={() => rotate.mutate(database.id)}
        >
          Rotate password
        </button>
        {/* Focused on opening, rather than the first field (whose text would be selected). */}
        <button type="button" class="primary" autoFocus onClick={onClose}>
          Close
        </button>
      </div>
    </div>
  );
}

/** A value to read and copy: a read-only input (a text area when long), so it is selectable and labelled. */
function ReadOnlyField({ label, value, multiline = false }: { label: string; value: string; multiline?: boolean }) {
  const select = (event: { currentTarget: HTMLInputElement | HTMLTextAreaElement }) => event.currentTarget.select();
  return (
    <label>
      {label}
      {multiline ? (
        <textarea class="mono read-only-value" readOnly rows={3} value={value} onFocus={select} />
      ) : (
        <input class="mono" readOnly value={value} onFocus={select} />
      )}
    </label>
  );
}
