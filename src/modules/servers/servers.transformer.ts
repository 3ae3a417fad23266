import type { AllocationRow, ServerRow, UserRow } from '../../db/schema.js';
import type { ServerResources } from '../../daemon/daemon.js';
import { item } from '../../http/envelopes.js';
import type { Access } from '../../http/permissions.js';
import { allocationList } from '../allocations/allocations.transformer.js';

/**
 * The `server` object in the shape Pterodactyl's clients parse. `allocations`:
 * the ones the viewer may see (allocations.service.ts allocationsShownTo).
 */
export function serverItem(server: ServerRow, viewer: UserRow, allocations: readonly AllocationRow[]) {
  return item('server', {
    server_owner: server.owner_id === viewer.id,
    identifier: server.uuid_short,
    internal_id: server.id,
    uuid: server.uuid,
    name: server.name,
    node: server.node,
    is_node_under_maintenance: false,
    sftp_details: { ip: '127.0.0.1', port: 2022 },
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
