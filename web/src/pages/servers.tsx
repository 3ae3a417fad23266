/** The server list (GET /api/client): each server the user can see, its limits, and its live state and figures. */
import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter-preact';
import { useServerResources } from '../api/resources';
import { serversQuery } from '../api/servers';
import type { ServerAttributes } from '../api/types';
import { ErrorText, Loading, StateBadge } from '../components/ui';
import { bytes } from '../lib/format';

const STATUS_LABELS: Record<string, string> = {
  installing: 'Installing',
  install_failed: 'Install failed',
  suspended: 'Suspended',
  restoring_backup: 'Restoring a backup',
};

function limitsText({ limits }: ServerAttributes): string {
  const parts = [
    limits.memory > 0 ? `${bytes(limits.memory * 1024 * 1024)} memory` : null,
    limits.cpu > 0 ? `${limits.cpu}% CPU` : null,
    limits.disk > 0 ? `${bytes(limits.disk * 1024 * 1024)} disk` : null,
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(' · ') : 'No limits';
}

/** A server's live state, memory and CPU (GET .../resources), asked again every 10 seconds. */
function LiveFigures({ identifier }: { identifier: string }) {
  const live = useServerResources(identifier, { refetchIntervalMs: 10_000 });
  if (!live.data) return null;
  const { current_state: state, resources } = live.data.attributes;
  return (
    <span class="small live-figures">
      <StateBadge state={state} />{' '}
      {state !== 'offline' && (
        <span class="muted">
          {bytes(resources.memory_bytes)} · {resources.cpu_absolute.toFixed(1)} % CPU
        </span>
      )}
    </span>
  );
}

/** The servers the user can see (GET /api/client), each linking to its page. */
export function ServersPage() {
  const servers = useQuery(serversQuery);
  return (
    <>
      <h1>Your servers</h1>
      {servers.isPending && <Loading what="servers" />}
      <ErrorText error={servers.error} />
      {servers.data && servers.data.data.length === 0 && (
        <p>
          You have no servers yet. An administrator creates them with <code>quetzal server:create</code>.
        </p>
      )}
      {servers.data && servers.data.data.length > 0 && (
        <ul class="server-list" aria-label="Servers">
          {servers.data.data.map(({ attributes: server }) => (
            <li key={server.uuid} class="card server-card">
              <Link href={`/server/${server.identifier}`} class="server-name">
                {server.name}
              </Link>
              <span class="muted small">{limitsText(server)}</span>
              <span class="muted mono">{server.identifier}</span>
              {server.status === null && <LiveFigures identifier={server.identifier} />}
              {server.status && <span class="badge warn">{STATUS_LABELS[server.status] ?? server.status}</span>}
              {!server.server_owner && <span class="badge">Shared with you</span>}
            </li>
          ))}
        </ul>
      )}
      {(servers.data?.meta?.pagination?.total ?? 0) > 100 && <p class="muted">Showing the first 100 servers.</p>}
    </>
  );
}
