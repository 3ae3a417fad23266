import { randomUUID } from 'node:crypto';
import type { AppDeps } from '../../deps.js';
import type { Queryable } from '../../db/database.js';
import type { EggRow, ServerRow, ServerStatus, UserRow } from '../../db/schema.js';
import { findEgg } from '../eggs/eggs.repository.js';
import { findSubuserPermissionsOn, findSubusersOfServers, type SubuserListRow } from '../subusers/subusers.repository.js';
import { NO_LIMITS, type Daemon, type DaemonServer, type ServerLimits, type ServerResources } from '../../daemon/daemon.js';
import type { PageRequest } from '../../http/query.js';
import { allocationsForDaemon } from '../allocations/allocations.service.js';
import { eggDaemonFields } from '../eggs/egg-runtime.js';
import { badRequest } from '../../http/errors.js';
import {
  countVisibleServers,
  findVisibleServersPage,
  insertServer,
  isShortIdentifierTaken,
  type ServerListCriteria,
} from './servers.repository.js';

export interface NewServerInput {
  ownerId: number;
  name: string;
  startup?: string | null;
  stopCommand?: string | null;
  backupLimit?: number;
  /** How many allocations the server's users may hold (docs/reference/network-and-allocations.md); default 0. */
  allocationLimit?: number;
  /** Absent = no limits (docs/reference/containment.md: 0 = unlimited; pids null = the daemon's default). */
  limits?: ServerLimits;
  /** The egg it is made from (docs/reference/eggs-and-installs.md; see modules/eggs/egg-servers.ts); absent = none. */
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

/** What GET /api/client's query asks for beyond the page (docs/reference/accounts.md): which servers, in which order, with which relationships. */
export interface ServerListRequest {
  criteria: ServerListCriteria;
  includes: { egg: boolean; subusers: boolean };
}

const ALLOWED_FILTERS = ['uuid', 'name', 'external_id', '*'] as const;
const ALLOWED_SORTS = ['id', 'uuid', 'name', 'description'] as const;

/**
 * Reads `type`, `filter[...]`, `sort` and `include` as Pterodactyl's
 * ClientController (Spatie's QueryBuilder) does: an unknown filter or sort is
 * Pterodactyl's 400; an unknown include is ignored, as Pterodactyl's
 * getIncludesForTransformer drops it; an unknown `type` lists the default.
 */
export function parseServerListQuery(user: UserRow, query: Readonly<Record<string, unknown>>): ServerListRequest {
  const type = query.type;
  const admin = user.root_admin === 1;
  const scope: ServerListCriteria['scope'] =
    type === 'admin'
      ? admin
        ? 'others'
        : 'none'
      : type === 'admin-all'
        ? admin
          ? 'all'
          : 'none'
        : type === 'owner'
          ? 'owned'
          : 'accessible';

  const filters: ServerListCriteria['filters'] = {};
  const rawFilters = query.filter;
  if (rawFilters !== undefined && rawFilters !== null && typeof rawFilters === 'object' && !Array.isArray(rawFilters)) {
    const entries = Object.entries(rawFilters as Record<string, unknown>);
    const unknown = entries.map(([key]) => key).filter((key) => !(ALLOWED_FILTERS as readonly string[]).includes(key));
    if (unknown.length > 0) {
      throw badRequest(
        `Requested filter(s) \`${unknown.join(', ')}\` are not allowed. Allowed filter(s) are \`${ALLOWED_FILTERS.join(', ')}\`.`,
        'InvalidFilterQuery',
      );
    }
    for (const [key, raw] of entries) {
      const values = filterValues(raw);
      if (values.length === 0) continue;
      if (key === 'uuid') filters.uuid = values;
      else if (key === 'name') filters.name = values;
      else if (key === 'external_id') filters.externalId = values;
      else filters.any = values;
    }
  }

  let sort: ServerListCriteria['sort'] = { column: 'id', descending: false };
  if (typeof query.sort === 'string' && query.sort !== '') {
    const descending = query.sort.startsWith('-');
    const column = descending ? query.sort.slice(1) : query.sort;
    if (!(ALLOWED_SORTS as readonly string[]).includes(column)) {
      throw badRequest(
        `Requested sort(s) \`${column}\` is not allowed. Allowed sort(s) are \`${ALLOWED_SORTS.join(', ')}\`.`,
        'InvalidSortQuery',
      );
    }
    sort = { column: column as ServerListCriteria['sort']['column'], descending };
  }

  const includes = typeof query.include === 'string' ? query.include.split(',').map((part) => part.trim()) : [];
  return {
    criteria: { scope, filters, sort },
    includes: { egg: includes.includes('egg'), subusers: includes.includes('subusers') },
  };
}

/** A filter's values: Spatie splits a string at commas; empty parts are dropped. */
function filterValues(raw: unknown): string[] {
  const parts =
    typeof raw === 'string' ? raw.split(',') : Array.isArray(raw) ? raw.filter((v): v is string => typeof v === 'string') : [];
  return parts.map((part) => part.trim()).filter((part) => part !== '');
}

/** One page of the servers `user` asks for (docs/reference/accounts.md) and how many there are. */
export async function listVisibleServers(
  db: Queryable,
  user: UserRow,
  criteria: ServerListCriteria,
  { page, perPage }: PageRequest,
) {
  const total = await countVisibleServers(db, user, criteria);
  const rows = await findVisibleServersPage(db, user, criteria, perPage, (page - 1) * perPage);
  return { rows, total };
}

/** Each server's egg (servers without one are absent): one lookup per distinct egg. */
export async function eggsOfServers(db: Queryable, servers: readonly ServerRow[]): Promise<Map<number, EggRow>> {
  const eggs = new Map<number, EggRow | undefined>();
  for (const id of new Set(servers.map((s) => s.egg_id).filter((id): id is number => id !== null))) {
    eggs.set(id, await findEgg(db, id));
  }
  const byServer = new Map<number, EggRow>();
  for (const server of servers) {
    const egg = server.egg_id === null ? undefined : eggs.get(server.egg_id);
    if (egg) byServer.set(server.id, egg);
  }
  return byServer;
}

/**
 * Each server's subusers, for the servers on which `viewer` holds `user.read`
 * (others are absent: Pterodactyl sends them a null resource). Two queries whatever the page's size.
 */
export async function subusersOfServersShownTo(
  db: Queryable,
  viewer: UserRow,
  servers: readonly ServerRow[],
): Promise<Map<number, SubuserListRow[]>> {
  const ids = servers.map((server) => server.id);
  const permissions = viewer.root_admin === 1 ? new Map<number, string[]>() : await findSubuserPermissionsOn(db, viewer.id, ids);
  const shown = servers
    .filter((s) => viewer.root_admin === 1 || s.owner_id === viewer.id || (permissions.get(s.id) ?? []).includes('user.read'))
    .map((s) => s.id);
  const byServer = new Map<number, SubuserListRow[]>(shown.map((id) => [id, []]));
  for (const row of await findSubusersOfServers(db, shown)) byServer.get(row.server_id)?.push(row);
  return byServer;
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
 * primary first (docs/reference/network-and-allocations.md), read now, so that a start publishes what the
 * database holds at that moment. Every door that can start a server (the power
 * route, the websocket's `set state`, a schedule's power task) goes through it,
 * and so gets the egg's startup, environment, done lines and config files
 * as the database holds them at that moment.
 */
export async function daemonServerForPower(db: Queryable, server: ServerRow): Promise<DaemonServer> {
  const allocations = await allocationsForDaemon(db, server);
  // The egg's part (docs/reference/eggs-and-installs.md): startup in the shell's form, environment, done lines, config files, stop.
  return { ...daemonServer(server), allocations, ...(await eggDaemonFields(db, server, allocations)) };
}

/** A server row's limits in the daemon's terms (docs/reference/containment.md). */
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
