import type { Database } from '../../db/database.js';
import {
  ANY_ADDRESS,
  deleteFreeAllocationsAt,
  findAllocationsAt,
  findOverlappingAllocations,
  insertAllocationsIgnoringExisting,
} from './allocations.repository.js';
import { allocationName } from './allocations.transformer.js';

/**
 * The machine's pool of allocations, as the admin command line keeps it
 * (docs/reference/network-and-allocations.md: allocation:add and allocation:remove). The command line checks the
 * address and ports; this keeps the pool consistent.
 */

/** A pool change refused as a whole; nothing was changed. */
export class AllocationPoolError extends Error {}

/** How many of a refusal's allocations its message names before "and N more". */
const NAMED = 5;

function named(rows: readonly { ip: string; port: number }[]): string {
  const shown = rows.slice(0, NAMED).map(allocationName).join(', ');
  return rows.length > NAMED ? `${shown} and ${rows.length - NAMED} more` : shown;
}

/**
 * Adds `ip` on each of `ports`; those that exist already are left as they are
 * (alias included). Refused when the same port exists under another address
 * that overlaps this one (0.0.0.0 and any address): both would publish the
 * same traffic, to two servers.
 */
export async function addAllocations(
  db: Database,
  input: { ip: string; ports: readonly number[]; alias: string | null; now: number },
): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const overlapping = await findOverlappingAllocations(trx, input.ip, input.ports);
    if (overlapping.length > 0) {
      const why = input.ip === ANY_ADDRESS ? `${ANY_ADDRESS} covers every address` : `${ANY_ADDRESS} covers ${input.ip}`;
      throw new AllocationPoolError(`${named(overlapping)} already exist, and ${why}: remove them first`);
    }
    return insertAllocationsIgnoringExisting(
      trx,
      input.ports.map((port) => ({
        ip: input.ip,
        ip_alias: input.alias,
        port,
        server_id: null,
        notes: null,
        created_at: input.now,
        updated_at: input.now,
      })),
    );
  });
}

/** Removes `ip` on each of `ports` (those that do not exist are skipped); refused, removing none, while a server holds any. */
export async function removeAllocations(db: Database, input: { ip: string; ports: readonly number[] }): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const held = (await findAllocationsAt(trx, input.ip, input.ports)).filter((row) => row.server_id !== null);
    if (held.length > 0) {
      throw new AllocationPoolError(`${named(held)} ${held.length === 1 ? 'is' : 'are'} held by a server: nothing was removed`);
    }
    return deleteFreeAllocationsAt(trx, input.ip, input.ports);
  });
}
