import type { AppDeps } from '../../deps.js';
import type { Queryable } from '../../db/database.js';
import type { AllocationRow, ServerRow, UserRow } from '../../db/schema.js';
import type { ServerAllocation } from '../../daemon/daemon.js';
import { displayException, notFound } from '../../http/errors.js';
import { can, type Access } from '../../http/permissions.js';
import { recordActivity, type Actor } from '../activity/activity.recorder.js';
import {
  claimFreeAllocation,
  countAllocationsOfServer,
  findAllocationAt,
  findAllocationOfServer,
  findAllocationsOfServer,
  findAllocationsOfServers,
  findFirstFreeAllocation,
  lockServerForAllocations,
  releaseAllocation,
  setAllocationNotes,
  setPrimaryAllocation,
} from './allocations.repository.js';
import { findSubuserPermissionsOn } from '../subusers/subusers.repository.js';
import type { UpdateAllocationInput } from './allocations.schemas.js';
import { allocationName } from './allocations.transformer.js';

type Deps = Pick<AppDeps, 'db' | 'clock'>;

/** How many times a pick is retried when a concurrent assignment took the free allocation first. */
const CLAIM_ATTEMPTS = 20;

/** A server's allocations, primary first then in the order they were given, as the daemon publishes them (docs/reference/network-and-allocations.md). */
export async function allocationsForDaemon(
  db: Queryable,
  server: Pick<ServerRow, 'id' | 'allocation_id'>,
): Promise<ServerAllocation[]> {
  const rows = await findAllocationsOfServer(db, server.id);
  const primary = rows.filter((row) => row.id === server.allocation_id);
  const others = rows.filter((row) => row.id !== server.allocation_id);
  return [...primary, ...others].map((row) => ({ ip: row.ip, port: row.port }));
}

/** GET /network/allocations: every allocation the server holds, in the order it got them (as Pterodactyl lists them). */
export async function listServerAllocations(db: Queryable, server: ServerRow): Promise<AllocationRow[]> {
  return findAllocationsOfServer(db, server.id);
}

/**
 * What the server object's `relationships.allocations` shows: all of them to
 * whoever holds `allocation.read`; to anyone else only the primary, without
 * its notes (Pterodactyl's ServerTransformer does the same, so that the
 * address a server is reached on is never hidden).
 */
function allocationsShownTo(access: Access, server: ServerRow, allocations: readonly AllocationRow[]): AllocationRow[] {
  if (can(access, 'allocation.read')) return [...allocations];
  return allocations.filter((row) => row.id === server.allocation_id).map((row) => ({ ...row, notes: null }));
}

/** The allocations one server object shows `access`. */
export async function allocationsOfServerShownTo(db: Queryable, access: Access, server: ServerRow): Promise<AllocationRow[]> {
  return allocationsShownTo(access, server, await findAllocationsOfServer(db, server.id));
}

/** The same for a page of the server list: at most two queries (allocations, the viewer's subuser rights) whatever its size. */
export async function allocationsOfServersShownTo(
  db: Queryable,
  viewer: UserRow,
  servers: readonly ServerRow[],
): Promise<Map<number, AllocationRow[]>> {
  const ids = servers.map((server) => server.id);
  const byServer = await findAllocationsOfServers(db, ids);
  const permissions = viewer.root_admin === 1 ? new Map<number, string[]>() : await findSubuserPermissionsOn(db, viewer.id, ids);
  const shown = new Map<number, AllocationRow[]>();
  for (const server of servers) {
    const access: Access =
      viewer.root_admin === 1 || server.owner_id === viewer.id
        ? { isOwnerOrAdmin: true, permissions: new Set() }
        : { isOwnerOrAdmin: false, permissions: new Set(permissions.get(server.id) ?? []) };
    shown.set(server.id, allocationsShownTo(access, server, byServer.get(server.id) ?? []));
  }
  return shown;
}

/**
 * POST /network/allocations (Pterodactyl's NetworkAllocationController::store):
 * a free allocation on the primary's IP, the lowest port first, while the
 * server holds fewer than its `allocation_limit`. A server with no primary gets
 * the first free allocation on any IP, and it becomes its primary.
 */
export async function assignAllocation(deps: Deps, server: ServerRow, actor: Actor): Promise<AllocationRow> {
  return deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now();
    const current = await lockServerForAllocations(trx, server.id);
    if (!current) throw notFound();
    if ((await countAllocationsOfServer(trx, current.id)) >= current.allocation_limit) {
      throw displayException('Cannot assign additional allocations to this server: limit has been reached.');
    }
    const primary =
      current.allocation_id === null ? undefined : await findAllocationOfServer(trx, current.allocation_id, current.id);
    const allocation = await claimFirstFree(trx, current.id, primary?.ip, now);
    if (!allocation) throw displayException('Cannot assign additional allocation: no more space available on node.');
    if (!primary) await setPrimaryAllocation(trx, current.id, allocation.id, now);
    await recordActivity(trx, {
      serverId: current.id,
      event: 'server:allocation.create',
      actor,
      properties: { allocation: allocationName(allocation) },
      timestamp: now,
    });
    return allocation;
  });
}

/** The first free allocation (on `ip` if given), now the server's; undefined when none is free. */
async function claimFirstFree(db: Queryable, serverId: number, ip: string | undefined, now: number) {
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const free = await findFirstFreeAllocation(db, ip);
    if (!free) return undefined;
    if (await claimFreeAllocation(db, free.id, serverId, now)) return { ...free, server_id: serverId, updated_at: now };
  }
  return undefined;
}

/** POST /network/allocations/{id} `{notes}`: logged `server:allocation.notes` only when they changed, as Pterodactyl does. */
export async function updateAllocationNotes(
  deps: Deps,
  server: ServerRow,
  allocation: AllocationRow,
  actor: Actor,
  input: UpdateAllocationInput,
): Promise<AllocationRow> {
  const notes = input.notes?.trim() || null;
  return deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now();
    const current = await findAllocationOfServer(trx, allocation.id, server.id);
    if (!current) throw notFound();
    if (current.notes === notes) return current;
    const updated = await setAllocationNotes(trx, current.id, notes, now);
    await recordActivity(trx, {
      serverId: server.id,
      event: 'server:allocation.notes',
      actor,
      properties: { allocation: allocationName(current), old: current.notes, new: notes },
      timestamp: now,
    });
    return updated;
  });
}

/** POST /network/allocations/{id}/primary: SERVER_IP and SERVER_PORT from the next start on. */
export async function makeAllocationPrimary(
  deps: Deps,
  server: ServerRow,
  allocation: AllocationRow,
  actor: Actor,
): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now();
    const current = await lockServerForAllocations(trx, server.id);
    if (!current || !(await findAllocationOfServer(trx, allocation.id, server.id))) throw notFound();
    await setPrimaryAllocation(trx, server.id, allocation.id, now);
    await recordActivity(trx, {
      serverId: server.id,
      event: 'server:allocation.primary',
      actor,
      properties: { allocation: allocationName(allocation) },
      timestamp: now,
    });
  });
}

/**
 * DELETE /network/allocations/{id}: frees it (its notes cleared). As in
 * Pterodactyl, refused for the primary and on a server whose users may not
 * add allocations (`allocation_limit` 0: what the admin gave, they keep).
 */
export async function removeAllocation(deps: Deps, server: ServerRow, allocation: AllocationRow, actor: Actor): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const now = deps.clock.now();
    const current = await lockServerForAllocations(trx, server.id);
    if (!current || !(await findAllocationOfServer(trx, allocation.id, server.id))) throw notFound();
    if (current.allocation_limit === 0) {
      throw displayException('You cannot delete allocations for this server: no allocation limit is set.');
    }
    if (current.allocation_id === allocation.id)
      throw displayException('You cannot delete the primary allocation for this server.');
    await releaseAllocation(trx, allocation.id, server.id, now);
    await recordActivity(trx, {
      serverId: server.id,
      event: 'server:allocation.delete',
      actor,
      properties: { allocation: allocationName(allocation) },
      timestamp: now,
    });
  });
}

/** What `server:create --allocation` asks for: a given address and port, or the first free one. */
export type InitialAllocation = { kind: 'auto' } | { kind: 'exact'; ip: string; port: number };

/** `--allocation IP:PORT` that cannot be given (docs/reference/network-and-allocations.md): it does not exist, or another server holds it. */
export class AllocationUnavailableError extends Error {}

/** Throws what assignInitialAllocation would for an exact one, before anything is made (a volume is not in the transaction). */
export async function assertInitialAllocationAvailable(db: Queryable, choice: InitialAllocation): Promise<void> {
  if (choice.kind === 'auto') return;
  const found = await findAllocationAt(db, choice.ip, choice.port);
  if (!found) throw new AllocationUnavailableError(`No allocation ${allocationName(choice)} exists (allocation:add makes it).`);
  if (found.server_id !== null)
    throw new AllocationUnavailableError(`The allocation ${allocationName(choice)} is held by another server.`);
}

/**
 * Gives a new server its primary allocation, in the transaction that creates
 * it: `auto` takes the first free one (none free: the server has none);
 * an exact one must exist and be free.
 */
export async function assignInitialAllocation(
  db: Queryable,
  server: ServerRow,
  choice: InitialAllocation,
  now: number,
): Promise<AllocationRow | undefined> {
  let allocation: AllocationRow | undefined;
  if (choice.kind === 'auto') {
    allocation = await claimFirstFree(db, server.id, undefined, now);
    if (!allocation) return undefined;
  } else {
    const name = allocationName(choice);
    const found = await findAllocationAt(db, choice.ip, choice.port);
    if (!found) throw new AllocationUnavailableError(`No allocation ${name} exists (allocation:add makes it).`);
    if (!(await claimFreeAllocation(db, found.id, server.id, now))) {
      throw new AllocationUnavailableError(`The allocation ${name} is held by another server.`);
    }
    allocation = { ...found, server_id: server.id, updated_at: now };
  }
  await setPrimaryAllocation(db, server.id, allocation.id, now);
  return allocation;
}
