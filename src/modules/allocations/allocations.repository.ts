import type { Queryable } from '../../db/database.js';
import type { AllocationRow, NewAllocation, ServerRow } from '../../db/schema.js';

/** An allocation with the UUID of the server holding it (null when free): what the admin command line lists. */
type AllocationWithHolder = AllocationRow & { server_uuid: string | null };

/** Every address of the machine (docs/reference/network-and-allocations.md): one allocation on it publishes the port on all of them. */
export const ANY_ADDRESS = '0.0.0.0';

/** Rows per INSERT: 8 columns each keeps every statement far below SQLite's bound-parameter limit. */
const INSERT_CHUNK = 500;

/** Inserts the allocations that do not exist yet (same ip and port); returns how many were new. */
export async function insertAllocationsIgnoringExisting(db: Queryable, rows: readonly NewAllocation[]): Promise<number> {
  let created = 0;
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    const inserted = await db
      .insertInto('allocations')
      .values(rows.slice(i, i + INSERT_CHUNK))
      .onConflict((oc) => oc.columns(['ip', 'port']).doNothing())
      .returning('id')
      .execute();
    created += inserted.length;
  }
  return created;
}

/** Every allocation, or a server's, or the free ones, in the order they were added. */
export async function findAllocationsWithHolder(
  db: Queryable,
  filter: { serverId?: number; free?: boolean } = {},
): Promise<AllocationWithHolder[]> {
  let query = db
    .selectFrom('allocations as a')
    .leftJoin('servers as s', 's.id', 'a.server_id')
    .selectAll('a')
    .select('s.uuid as server_uuid');
  if (filter.serverId !== undefined) query = query.where('a.server_id', '=', filter.serverId);
  if (filter.free) query = query.where('a.server_id', 'is', null);
  return query.orderBy('a.id').execute();
}

/** The allocations among `ports` on `ip`, in port order. */
export async function findAllocationsAt(db: Queryable, ip: string, ports: readonly number[]): Promise<AllocationRow[]> {
  if (ports.length === 0) return [];
  const found: AllocationRow[] = [];
  for (let i = 0; i < ports.length; i += INSERT_CHUNK) {
    const chunk = ports.slice(i, i + INSERT_CHUNK);
    found.push(...(await db.selectFrom('allocations').selectAll().where('ip', '=', ip).where('port', 'in', chunk).execute()));
  }
  return found.sort((a, b) => a.port - b.port);
}

/**
 * Allocations that would publish the same traffic as `ip` on one of `ports`
 * under another address: `0.0.0.0` covers every address, so it overlaps any
 * address's same port, and any address overlaps `0.0.0.0`'s.
 */
export async function findOverlappingAllocations(db: Queryable, ip: string, ports: readonly number[]): Promise<AllocationRow[]> {
  const found: AllocationRow[] = [];
  for (let i = 0; i < ports.length; i += INSERT_CHUNK) {
    const chunk = ports.slice(i, i + INSERT_CHUNK);
    let query = db.selectFrom('allocations').selectAll().where('port', 'in', chunk).where('ip', '!=', ip);
    if (ip !== ANY_ADDRESS) query = query.where('ip', '=', ANY_ADDRESS);
    found.push(...(await query.execute()));
  }
  return found.sort((a, b) => a.port - b.port);
}

/** Deletes the free allocations among `ports` on `ip`; returns how many went. */
export async function deleteFreeAllocationsAt(db: Queryable, ip: string, ports: readonly number[]): Promise<number> {
  let removed = 0;
  for (let i = 0; i < ports.length; i += INSERT_CHUNK) {
    const result = await db
      .deleteFrom('allocations')
      .where('ip', '=', ip)
      .where('port', 'in', ports.slice(i, i + INSERT_CHUNK))
      .where('server_id', 'is', null)
      .executeTakeFirst();
    removed += Number(result.numDeletedRows);
  }
  return removed;
}

/** A server's allocations in the order they were added (Pterodactyl lists them by id). */
export async function findAllocationsOfServer(db: Queryable, serverId: number): Promise<AllocationRow[]> {
  return db.selectFrom('allocations').selectAll().where('server_id', '=', serverId).orderBy('id').execute();
}

/** The allocations of several servers (a page of the server list), each server's in id order. */
export async function findAllocationsOfServers(
  db: Queryable,
  serverIds: readonly number[],
): Promise<Map<number, AllocationRow[]>> {
  const byServer = new Map<number, AllocationRow[]>();
  if (serverIds.length === 0) return byServer;
  const rows = await db.selectFrom('allocations').selectAll().where('server_id', 'in', serverIds).orderBy('id').execute();
  for (const row of rows) {
    const list = byServer.get(row.server_id!) ?? [];
    list.push(row);
    byServer.set(row.server_id!, list);
  }
  return byServer;
}

/** One allocation, only if `serverId` holds it: any other is a 404 (docs/reference/api.md#errors). */
export async function findAllocationOfServer(
  db: Queryable,
  allocationId: number,
  serverId: number,
): Promise<AllocationRow | undefined> {
  return db
    .selectFrom('allocations')
    .selectAll()
    .where('id', '=', allocationId)
    .where('server_id', '=', serverId)
    .executeTakeFirst();
}

export async function findAllocationAt(db: Queryable, ip: string, port: number): Promise<AllocationRow | undefined> {
  return db.selectFrom('allocations').selectAll().where('ip', '=', ip).where('port', '=', port).executeTakeFirst();
}

/**
 * The free allocation a server would be given: on `ip` (the primary's) the
 * lowest port, or without `ip` the first one added.
 */
export async function findFirstFreeAllocation(db: Queryable, ip?: string): Promise<AllocationRow | undefined> {
  let query = db.selectFrom('allocations').selectAll().where('server_id', 'is', null);
  query = ip === undefined ? query.orderBy('id') : query.where('ip', '=', ip).orderBy('port');
  return query.limit(1).executeTakeFirst();
}

/**
 * Gives a free allocation to a server, only if it is still free: false when a
 * concurrent assignment took it first (the caller picks another).
 */
export async function claimFreeAllocation(db: Queryable, allocationId: number, serverId: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('allocations')
    .set({ server_id: serverId, updated_at: now })
    .where('id', '=', allocationId)
    .where('server_id', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Frees a server's allocation; its notes go with it, as Pterodactyl clears them. */
export async function releaseAllocation(db: Queryable, allocationId: number, serverId: number, now: number): Promise<void> {
  await db
    .updateTable('allocations')
    .set({ server_id: null, notes: null, updated_at: now })
    .where('id', '=', allocationId)
    .where('server_id', '=', serverId)
    .execute();
}

export async function setAllocationNotes(
  db: Queryable,
  allocationId: number,
  notes: string | null,
  now: number,
): Promise<AllocationRow> {
  return db
    .updateTable('allocations')
    .set({ notes, updated_at: now })
    .where('id', '=', allocationId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function setPrimaryAllocation(db: Queryable, serverId: number, allocationId: number, now: number): Promise<void> {
  await db.updateTable('servers').set({ allocation_id: allocationId, updated_at: now }).where('id', '=', serverId).execute();
}

export async function countAllocationsOfServer(db: Queryable, serverId: number): Promise<number> {
  const { total } = await db
    .selectFrom('allocations')
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .where('server_id', '=', serverId)
    .executeTakeFirstOrThrow();
  return Number(total);
}

/**
 * The server's row as it is now, locked until the transaction ends (the row
 * lock on PostgreSQL, the write lock on SQLite): two assignments to one
 * server run one after the other, so neither passes its limit.
 */
export async function lockServerForAllocations(db: Queryable, serverId: number): Promise<ServerRow | undefined> {
  return db
    .updateTable('servers')
    .set((eb) => ({ allocation_limit: eb.ref('allocation_limit') }))
    .where('id', '=', serverId)
    .returningAll()
    .executeTakeFirst();
}
