import { lstatSync } from 'node:fs';
import { DaemonError, type DaemonServer } from '../../daemon.js';
import { serverUid, UidRangeExhaustedError, type ContainerRuntime } from '../container/container-runtime.js';

/**
 * The uid (and gid) the server runs as when confined: its own from
 * SERVER_UID_RANGE (docs/reference/containment.md); undefined unconfined. A caller that does not
 * know the server's slot (a DaemonServer built from a partial row) gets
 * the uid its volume was given, when that lies in the range: never the
 * shared SERVER_UID, which would take the volume back from the server's uid.
 */
export function confinedUidOf(containers: ContainerRuntime | null, server: DaemonServer, volumeDir: string): number | undefined {
  if (!containers) return undefined;
  const range = containers.uidRange;
  if (range !== null && (server.uidSlot === undefined || server.uidSlot === null)) {
    // Only the daemon (root) gives a volume's root away: a server's own process cannot chown it to another uid.
    const owner = lstatSync(volumeDir, { throwIfNoEntry: false })?.uid;
    if (owner !== undefined && owner >= range.first && owner <= range.last) return owner;
  }
  try {
    return serverUid(containers, server.uidSlot);
  } catch (err) {
    if (err instanceof UidRangeExhaustedError) throw new DaemonError(err.message);
    throw err;
  }
}
