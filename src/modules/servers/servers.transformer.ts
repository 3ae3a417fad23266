import type { Config } from '../../config.js';
import type { AllocationRow, ServerRow, UserRow } from '../../db/schema.js';
import type { ServerResources } from '../../daemon/daemon.js';
import { item } from '../../http/envelopes.js';
import type { Access } from '../../http/permissions.js';
import { allocationList } from '../allocations/allocations.transformer.js';

/** `sftp_details`: where the SFTP server answers. */
export interface SftpDetails {
  ip: string;
  port: number;
}

/**
 * The address `sftp_details` names (SPEC 15): SFTP_HOST, or APP_URL's host
 * when SFTP_HOST is a wildcard (0.0.0.0, ::) that no client can dial; the
 * port this process bound (`boundPort`, the real one for SFTP_PORT=0 in
 * tests), else SFTP_PORT. SFTP_PORT=0 (off) gives port 0: Pterodactyl's
 * clients always get the object, and 0 says plainly that nothing answers.
 */
export function sftpDetails(
  config: Pick<Config, 'sftpHost' | 'sftpPort' | 'appUrl'>,
  boundPort: number | undefined,
): SftpDetails {
  const wildcard = config.sftpHost === '0.0.0.0' || config.sftpHost === '::' || config.sftpHost === '[::]';
  const ip = wildcard ? new URL(config.appUrl).hostname.replace(/^\[(.*)\]$/, '$1') : config.sftpHost;
  return { ip, port: boundPort ?? config.sftpPort };
}

/**
 * The `server` object in the shape Pterodactyl's clients parse. `allocations`:
 * the ones the viewer may see (allocations.service.ts allocationsShownTo).
 */
export function serverItem(server: ServerRow, viewer: UserRow, allocations: readonly AllocationRow[], sftp: SftpDetails) {
  return item('server', {
    server_owner: server.owner_id === viewer.id,
    identifier: server.uuid_short,
    internal_id: server.id,
    uuid: server.uuid,
    name: server.name,
    node: server.node,
    is_node_under_maintenance: false,
    sftp_details: sftp,
    description: '',
    // Pterodactyl's shape (no pids member, docs/DECISIONS.md); the OOM killer acts under containment.
    limits: {
      memory: server.memory_mib,
      swap: 0,
      disk: server.disk_mib,
      io: 500,
      cpu: server.cpu_percent,
      threads: null,
      oom_disabled: false,
    },
    invocation: server.startup ?? '',
    docker_image: '',
    egg_features: [],
    feature_limits: { databases: 0, allocations: server.allocation_limit, backups: server.backup_limit },
    status: server.status,
    is_suspended: server.status === 'suspended',
    is_installing: server.status === 'installing',
    is_transferring: false,
    relationships: {
      allocations: allocationList(allocations, server.allocation_id),
      variables: { object: 'list', data: [] },
    },
  });
}

/**
 * The `meta` Pterodactyl sends with one server: whether the caller owns it,
 * and what the caller may do on it (`*` for the owner and root admins, as
 * Pterodactyl's `user_permissions`), which front ends use to enable controls.
 */
export function serverMeta(server: ServerRow, viewer: UserRow, access: Access) {
  return {
    is_server_owner: server.owner_id === viewer.id,
    user_permissions: access.isOwnerOrAdmin ? ['*'] : [...access.permissions].sort(),
  };
}

/** GET /resources: Pterodactyl's `stats` object, the figures as Wings gives them (cpu_absolute to 3 decimals, uptime in whole ms). */
export function statsItem(server: ServerRow, resources: ServerResources) {
  return item('stats', {
    current_state: resources.state,
    is_suspended: server.status === 'suspended',
    resources: {
      memory_bytes: resources.memoryBytes,
      cpu_absolute: Math.round(resources.cpuAbsolute * 1000) / 1000,
      disk_bytes: resources.diskBytes,
      network_rx_bytes: resources.networkRxBytes,
      network_tx_bytes: resources.networkTxBytes,
      uptime: Math.round(resources.uptimeMs),
    },
  });
}
