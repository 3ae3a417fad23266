import { randomUUID } from 'node:crypto';
import type { AppDeps } from '../../deps.js';
import type { Queryable } from '../../db/database.js';
import type { ServerRow, ServerStatus, UserRow } from '../../db/schema.js';
import { NO_LIMITS, type Daemon, type DaemonServer, type ServerLimits, type ServerResources } from '../../daemon/daemon.js';
import type { PageRequest } from '../../http/query.js';
import { allocationsForDaemon } from '../allocations/allocations.service.js';
import { eggDaemonFields } from '../eggs/egg-runtime.js';
import { countVisibleServers, findVisibleServersPage, insertServer, isShortIdentifierTaken } from './servers.repository.js';

export interface NewServerInput {
  ownerId: number;
  name: string;
  startup?: string | null;
  stopCommand?: string | null;
  backupLimit?: number;
  /** How many allocations the server's users may hold (SPEC 13); default 0. */
  allocationLimit?: number;
  /** Absent = no limits (SPEC 10: 0 = unlimited; pids null = the daemon's default). */
  limits?: ServerLimits;
  /** The egg it is made from (SPEC 16; see modules/eggs/egg-servers.ts); absent = none. */
  eggId?: number | null;
  /** The image it runs on; absent or null = `host`. */
  image?: string | null;
  now: number;
}

/** Creates a server with a fresh UUID whose first 8 characters (the short identifier) are unique too. */
export async function createServer(db: Queryable, daemon: Daemon, input: NewServerInput): Promise<ServerRow> {
  let uuid = randomUUID();
  while (await isShortIdentifierTaken(db, uuid.slice(0, 8))) uuid = randomUUID();
  const limits = input.limits ?? NO_LIMITS;
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
    memory_mib: limits.memoryMiB,
    cpu_percent: limits.cpuPercent,
    disk_mib: limits.diskMiB,
    pids: limits.pids,
    allocation_limit: input.allocationLimit ?? 0,
    inodes: limits.inodes ?? null,
    egg_id: input.eggId ?? null,
    image: input.image ?? null,
    created_at: input.now,
    updated_at: input.now,
  });
  await daemon.prepareVolume(daemonServer(row));
  return row;
}

/** One page of the servers `user` can see (owned, subuser of, or all for a root admin) and how many there are. */
export async function listVisibleServers(db: Queryable, user: UserRow, { page, perPage }: PageRequest) {
  const total = await countVisibleServers(db, user);
  const rows = await findVisibleServersPage(db, user, perPage, (page - 1) * perPage);
  return { rows, total };
}

/** The server's state and figures as the daemon measures them (GET /resources). */
export async function serverResources(deps: Pick<AppDeps, 'daemon'>, server: ServerRow): Promise<ServerResources> {
  return deps.daemon.resources(daemonServer(server));
}

export function daemonServer(server: ServerRow): DaemonServer {
  return {
    uuid: server.uuid,
    startup: server.startup,
    stopCommand: server.stop_command,
    limits: serverLimits(server),
    uidSlot: server.uid_slot,
    image: server.image,
  };
}

/**
 * The server as a power action hands it to the daemon: with its allocations,
 * primary first (SPEC 13), read now, so that a start publishes what the
 * database holds at that moment. Every door that can start a server (the power
 * route, the websocket's `set state`, a schedule's power task) goes through it,
 * and so gets the egg's startup, environment, done lines and config files
 * as the database holds them at that moment.
 */
export async function daemonServerForPower(db: Queryable, server: ServerRow): Promise<DaemonServer> {
  const allocations = await allocationsForDaemon(db, server);
  // The egg's part (SPEC 16): startup in the shell's form, environment, done lines, config files, stop.
  return { ...daemonServer(server), allocations, ...(await eggDaemonFields(db, server, allocations)) };
}

/** A server row's limits in the daemon's terms (SPEC 10). */
export function serverLimits(
  row: Pick<ServerRow, 'memory_mib' | 'cpu_percent' | 'disk_mib' | 'pids'> & Partial<Pick<ServerRow, 'inodes'>>,
): ServerLimits {
  const limits = { memoryMiB: row.memory_mib, cpuPercent: row.cpu_percent, diskMiB: row.disk_mib, pids: row.pids };
  // null (the default: 1 per 4 KiB of disk) is left out, as absent means the same.
  return row.inodes === null || row.inodes === undefined ? limits : { ...limits, inodes: row.inodes };
}

export const SERVER_STATUSES: readonly (ServerStatus | null)[] = [
  null,
  'installing',
  'install_failed',
  'suspended',
  'restoring_backup',
];
