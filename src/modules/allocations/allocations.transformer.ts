import type { AllocationRow } from '../../db/schema.js';
import { item, list } from '../../http/envelopes.js';

/** The `allocation` object as Pterodactyl's AllocationTransformer shapes it. */
export function allocationItem(allocation: AllocationRow, primaryId: number | null) {
  return item('allocation', {
    id: allocation.id,
    ip: allocation.ip,
    ip_alias: allocation.ip_alias,
    port: allocation.port,
    notes: allocation.notes,
    is_default: allocation.id === primaryId,
  });
}

export function allocationList(allocations: readonly AllocationRow[], primaryId: number | null) {
  return list(allocations.map((allocation) => allocationItem(allocation, primaryId)));
}

/** `ip:port`, how Pterodactyl names an allocation in its activity entries (Allocation::toString). */
export function allocationName(allocation: Pick<AllocationRow, 'ip' | 'port'>): string {
  return `${allocation.ip}:${allocation.port}`;
}
