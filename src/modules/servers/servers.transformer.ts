import type { ServerRow, UserRow } from '../../db/schema.js';
import type { ServerState } from '../../daemon/daemon.js';
import { item } from '../../http/envelopes.js';

/** The `server` object in the shape Pterodactyl's clients parse. */
export function serverItem(server: ServerRow, viewer: UserRow) {
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
    limits: { memory: 0, swap: 0, disk: 0, io: 500, cpu: 0, threads: null, oom_disabled: true },
    invocation: server.startup ?? '',
    docker_image: '',
    egg_features: [],
    feature_limits: { databases: 0, allocations: 0, backups: server.backup_limit },
    status: server.status,
    is_suspended: server.status === 'suspended',
    is_installing: server.status === 'installing',
    is_transferring: false,
    relationships: {
      allocations: { object: 'list', data: [] },
      variables: { object: 'list', data: [] },
    },
  });
}

/** GET /resources: the process state; usage figures are not measured (always zero). */
export function statsItem(server: ServerRow, state: ServerState) {
  return item('stats', {
    current_state: state,
    is_suspended: server.status === 'suspended',
    resources: { memory_bytes: 0, cpu_absolute: 0, disk_bytes: 0, network_rx_bytes: 0, network_tx_bytes: 0, uptime: 0 },
  });
}
