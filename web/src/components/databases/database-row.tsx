/** One database of the Databases section: its name, endpoint, username and where connections may come from, with Details and Delete. */
import { endpointOf, type ServerDatabase } from '../../api/databases';
import { useServer } from '../../lib/server-context';

interface DatabaseRowProps {
  database: ServerDatabase;
  onDetails(database: ServerDatabase): void;
  onDelete(database: ServerDatabase): void;
}

export function DatabaseRow({ database, onDetails, onDelete }: DatabaseRowProps) {
  const { permissions } = useServer();
  return (
    <li class="card row" aria-label={`Database ${database.name}`}>
      <div class="row-main">
        <span class="row-title mono wrap">{database.name}</span>
        <dl class="database-facts">
          <div>
            <dt>Endpoint</dt>
            <dd class="mono">{endpointOf(database)}</dd>
          </div>
          <div>
            <dt>Username</dt>
            <dd class="mono">{database.username}</dd>
          </div>
          <div>
            <dt>Connections from</dt>
            <dd class="mono">{database.connections_from}</dd>
          </div>
        </dl>
      </div>
      <div class="row-actions">
        <button type="button" aria-label={`Details of database ${database.name}`} onClick={() => onDetails(database)}>
          Details
        </button>
        <button
          type="button"
          class="danger"
          aria-label={`Delete database ${database.name}`}
          disabled={!permissions.can('database.delete')}
          onClick={() => onDelete(database)}
        >
          Delete
        </button>
      </div>
    </li>
  );
}
