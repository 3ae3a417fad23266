/**
 * The Network section's footer: how many allocations the server uses of its
 * limit, and "Create allocation", disabled with the reason when the limit is
 * reached, is 0, or the user may not add one.
 */
import { useCreateAllocation } from '../../api/network';
import { useServer } from '../../lib/server-context';
import { ErrorText } from '../ui';

/** The element saying why Create allocation is disabled; Remove points to it too when the limit is 0. */
export const ALLOCATION_REASON_ID = 'create-allocation-reason';

/** Why a new allocation cannot be asked for now, or null when it can. */
export function createAllocationBlocked(count: number, limit: number, allowed: boolean): string | null {
  // The API refuses removals too while the limit is 0: what the admin gave, the server keeps.
  if (limit === 0) return "This server's allocation limit is 0: allocations cannot be added or removed here.";
  if (!allowed) return 'You may not add allocations to this server.';
  if (count >= limit) return `This server has reached its limit of ${limit} allocation${limit === 1 ? '' : 's'}.`;
  return null;
}

export function CreateAllocation({ count, limit }: { count: number; limit: number }) {
  const { id, permissions } = useServer();
  const create = useCreateAllocation(id);
  const blocked = createAllocationBlocked(count, limit, permissions.can('allocation.create'));
  return (
    <div class="card stack network-footer">
      <div class="actions">
        <p class="muted" id="allocation-usage">
          {limit > 0 ? `Using ${count} of ${limit} allowed allocations.` : `Using ${count} allocation${count === 1 ? '' : 's'}.`}
          {blocked && <span id={ALLOCATION_REASON_ID}> {blocked}</span>}
        </p>
        <button
          type="button"
          class="primary"
          aria-describedby={blocked ? ALLOCATION_REASON_ID : undefined}
          disabled={blocked !== null || create.isPending}
          onClick={() => create.mutate()}
        >
          Create allocation
        </button>
      </div>
      <ErrorText error={create.error} />
    </div>
  );
}
