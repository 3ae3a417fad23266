import { useState } from 'preact/hooks';
import { featureLimit } from '../api/feature-limits';
import { allocationName, useAllocations, useRemoveAllocation, type Allocation } from '../api/network';
import { AllocationRow } from '../components/network/allocation-row';
import { CreateAllocation } from '../components/network/create-allocation';
import { ConfirmDialog, ErrorText, Loading } from '../components/ui';
import { useServer } from '../lib/server-context';

/**
 * Network (docs/reference/network-and-allocations.md): the server's allocations with their notes, the
 * primary one, new ones up to the server's allocation limit, and removal of
 * the others after a confirmation. Changes apply from the server's next start.
 */
export function NetworkSection() {
  const { id, server, permissions } = useServer();
  const allocations = useAllocations(id, permissions.can('allocation.read'));
  const remove = useRemoveAllocation(id);
  const [removing, setRemoving] = useState<Allocation | null>(null);
  const limit = featureLimit(server, 'allocations');

  if (!permissions.can('allocation.read')) return <p class="muted">You may not see this server's allocations.</p>;
  if (allocations.isPending) return <Loading what="the allocations" />;
  if (allocations.isError) return <ErrorText error={allocations.error} />;
  const list = allocations.data;
  return (
    <section aria-labelledby="network-title">
      <div class="section-head">
        <h2 id="network-title">Network</h2>
      </div>
      <p class="muted small">Changes take effect from the server's next start.</p>
      {list.length === 0 ? (
        <p class="muted">This server has no allocations: it publishes no port.</p>
      ) : (
        <ul class="rows" aria-label="Allocations">
          {list.map((allocation) => (
            <AllocationRow
              key={allocation.id}
              allocation={allocation}
              removeBlocked={limit === 0}
              onRemove={(chosen) => {
                remove.reset();
                setRemoving(chosen);
              }}
            />
          ))}
        </ul>
      )}
      <CreateAllocation count={list.length} limit={limit} />
      <ConfirmDialog
        open={removing !== null}
        title="Remove this allocation?"
        confirmLabel="Remove allocation"
        danger
        busy={remove.isPending}
        error={remove.error}
        onCancel={() => setRemoving(null)}
        onConfirm={() => {
          if (removing) remove.mutate(removing.id, { onSuccess: () => setRemoving(null) });
        }}
      >
        <p>
          The server stops listening on <span class="mono">{removing ? allocationName(removing) : ''}</span> from its next start,
          and the port goes back to the pool.
        </p>
      </ConfirmDialog>
    </section>
  );
}
