import { randomUUID } from 'node:crypto';
import type { AppDeps } from '../../deps.js';
import type { Queryable } from '../../db/database.js';
import type { ServerRow, ServerStatus, UserRow } from '../../db/schema.js';
import type { Daemon, ServerState } from '../../daemon/daemon.js';
import type { PageRequest } from '../../http/query.js';
import { countVisibleServers, findVisibleServersPage, insertServer, isShortIdentifierTaken } from './servers.repository.js';

export interface NewServerInput {
  ownerId: number;
  name: string;
  startup?: string | null;
  stopCommand?: string | null;
  backupLimit?: number;
  now: number;
}

/** Creates a server with a fresh UUID whose first 8 characters (the short identifier) are unique too. */
export async function createServer(db: Queryable, daemon: Daemon, input: NewServerInput): Promise<ServerRow> {
  let uuid = randomUUID();
  while (await isShortIdentifierTaken(db, uuid.slice(0, 8))) uuid = randomUUID();
  const row = await insertServer(db, {
    uuid,
    uuid_short: uuid.slice(0, 8),
    name: input.name.trim(),
    owner_id: input.ownerId,
    status: null,
    backup_limit: input.backupLimit ?? 10,
    startup: input.startup ?? null,
    stop_command: input.stopCommand ?? null,
    node: 'local',
    created_at: input.now,
    updated_at: input.now,
  });
  await daemon.prepareVolume({ uuid: row.uuid, startup: row.startup, stopCommand: row.stop_command });
  return row;
}

/** One page of the servers `user` can see (owned, subuser of, or all for a root admin) and how many there are. */
export async function listVisibleServers(db: Queryable, user: UserRow, { page, perPage }: PageRequest) {
  const total = await countVisibleServers(db, user);
  const rows = await findVisibleServersPage(db, user, perPage, (page - 1) * perPage);
  return { rows, total };
}

/** The server's process state as the daemon reports it (GET /resources). */
export async function serverState(deps: Pick<AppDeps, 'daemon'>, server: ServerRow): Promise<ServerState> {
  return deps.daemon.state(daemonServer(server));
}

export function daemonServer(server: ServerRow) {
  return { uuid: server.uuid, startup: server.startup, stopCommand: server.stop_command };
}

export const SERVER_STATUSES: readonly (ServerStatus | null)[] = [null, 'installing', 'install_failed', 'suspended', 'restoring_backup'];
