import type { Config } from '../../config.js';
import type { AllocationRow, EggRow, ServerRow, UserRow } from '../../db/schema.js';
import type { ServerResources } from '../../daemon/daemon.js';
import { item } from '../../http/envelopes.js';
import type { Access } from '../../http/permissions.js';
import { allocationList } from '../allocations/allocations.transformer.js';
import { renderStartupCommand } from '../startup/startup.command.js';
import type { StartupShown } from '../startup/startup.service.js';
import { eggVariableItem } from '../startup/startup.transformer.js';
import type { SubuserListRow } from '../subusers/subusers.repository.js';
import { subuserList } from '../subusers/subusers.transformer.js';

/** `sftp_details`: where the SFTP server answers. */
export interface SftpDetails {
  ip: string;
  port: number;
}

/**
 * The address `sftp_details` names (docs/reference/files-and-sftp.md): SFTP_HOST, or APP_URL's host
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

/** A server without an egg: no variables; `invocation` shown to every viewer (there is no value to hide). */
const NO_EGG: StartupShown = Object.freeze({ variables: [], canReadStartup: true });

/**
 * The `server` object in the shape Pterodactyl's clients parse. `allocations`:
 * the ones the viewer may see (allocations.service.ts allocationsShownTo);
 * `startup`: its egg variables and whether the viewer holds `startup.read`
 * (startup.service.ts startupShownTo), which `invocation` and
 * `relationships.variables` depend on as in Pterodactyl's ServerTransformer.
 */
export function serverItem(
  server: ServerRow,
  viewer: UserRow,
  allocations: readonly AllocationRow[],
  sftp: SftpDetails,
  startup: StartupShown = NO_EGG,
) {
  const primary = allocations.find((row) => row.id === server.allocation_id);
  const invocation = renderStartupCommand(
    server.startup ?? '',
    { memoryMiB: server.memory_mib, allocation: primary ? { ip: primary.ip, port: primary.port } : null },
    startup.variables,
    !startup.canReadStartup,
  );
  const variables = startup.variables.filter((variable) => variable.user_viewable === 1).map(eggVariableItem);
  return item('server', {
    server_owner: server.owner_id === viewer.id,
    identifier: server.uuid_short,
    internal_id: server.id,
    uuid: server.uuid,
    name: server.name,
    node: server.node,
    is_node_under_maintenance: false,
    sftp_details: sftp,
    description: server.description,
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
    invocation,
    // null in the row: the machine's own system, the image named `host` (docs/reference/eggs-and-installs.md).
    docker_image: server.image ?? 'host',
    egg_features: [],
    feature_limits: { databases: server.database_limit, allocations: server.allocation_limit, backups: server.backup_limit },
    status: server.status,
    is_suspended: server.status === 'suspended',
    // Pterodactyl's `!isInstalled()`: a failed install is not installed either.
    is_installing: server.status === 'installing' || server.status === 'install_failed',
    is_transferring: false,
    relationships: {
      allocations: allocationList(allocations, server.allocation_id),
      // Pterodactyl sends a null resource to a viewer without `startup.read`; an empty list keeps every client's parser happy.
      variables: { object: 'list', data: startup.canReadStartup ? variables : [] },
    },
  });
}

/** Fractal's null resource, which Pterodactyl sends for an include the viewer may not see or the server lacks. */
const NULL_RESOURCE = { object: 'null_resource', attributes: null } as const;

/**
 * `include=egg,subusers` on GET /api/client (docs/reference/accounts.md): the server object with
 * `relationships.egg` (Pterodactyl's client EggTransformer: uuid and name)
 * and `relationships.subusers` (null unless the viewer holds `user.read`).
 * Undefined: not asked for.
 */
export function withIncludes(
  server: ReturnType<typeof serverItem>,
  egg: Pick<EggRow, 'uuid' | 'name'> | null | undefined,
  subusers: readonly SubuserListRow[] | null | undefined,
) {
  const relationships: Record<string, unknown> = { ...server.attributes.relationships };
  if (egg !== undefined) relationships.egg = egg === null ? NULL_RESOURCE : item('egg', { uuid: egg.uuid, name: egg.name });
  if (subusers !== undefined) relationships.subusers = subusers === null ? NULL_RESOURCE : subuserList(subusers);
  return { ...server, attributes: { ...server.attributes, relationships } };
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
