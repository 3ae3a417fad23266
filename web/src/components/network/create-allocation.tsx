/**
 * The Network section's footer: how many allocations the server uses of its
 * limit, and "Create allocation", disabled with the reason when the limit is
 * reached, is 0, or the user may not add one.
 */
import { useCreateAllocation } from '../../api/network';
import { useServer } from '../../lib/server-context';
import { ErrorText } from '../ui';

/** Why a new allocation cannot be asked for now, or null when it can. */
export function createAllocationBlocked(count: number, limit: number, allowed: boolean): string | null {
  if (!allowed) return 'You may not add allocations to this server.';
  if (limit === 0) return 'This server cannot add allocations: its allocation limit is 0.';
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
          {blocked && <span id="create-allocation-reason"> {blocked}</span>}
        </p>
        <button
          type="button"
          class="primary"
          aria-describedby={blocked ? 'create-allocation-reason' : undefined}
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
