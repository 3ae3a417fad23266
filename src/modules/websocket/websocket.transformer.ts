import type { ServerResources } from '../../daemon/daemon.js';
import type { ServerRow } from '../../db/schema.js';
import type { BackupCompletedEvent } from '../../server-events.js';

const MIB = 1024 * 1024;

/**
 * The `stats` frame's argument, Wings' ResourceUsage as JSON (docs/reference/power-and-console.md#websocket):
 * memory_limit_bytes is the server's memory limit (0 = none), uptime in
 * milliseconds.
 */
export function statsPayload(resources: ServerResources, server: Pick<ServerRow, 'memory_mib'>): string {
  return JSON.stringify({
    memory_bytes: resources.memoryBytes,
    memory_limit_bytes: server.memory_mib * MIB,
    cpu_absolute: Math.round(resources.cpuAbsolute * 1000) / 1000,
    network: { rx_bytes: resources.networkRxBytes, tx_bytes: resources.networkTxBytes },
    uptime: resources.uptimeMs,
    state: resources.state,
    disk_bytes: resources.diskBytes,
  });
}

/** The `backup completed:<uuid>` frame's argument, as Wings publishes it (server/backup.go). */
export function backupCompletedPayload(event: BackupCompletedEvent): string {
  return JSON.stringify({
    uuid: event.backupUuid,
    is_successful: event.successful,
    checksum: event.checksum,
    checksum_type: 'sha1',
    file_size: event.bytes,
  });
}
