/**
 * One allocation of the Network section: its address (alias or IP) and port,
 * its notes edited in place (saved on blur or Enter), the primary badge, and
 * the "Make primary" and "Remove" buttons for the others.
 */
import { useEffect, useState } from 'preact/hooks';
import { allocationName, useMakeAllocationPrimary, useSetAllocationNotes, type Allocation } from '../../api/network';
import { useServer } from '../../lib/server-context';
import { ErrorText } from '../ui';
import { ALLOCATION_REASON_ID } from './create-allocation';

interface AllocationRowProps {
  allocation: Allocation;
  /** Remove is refused before asking (the server's allocation limit is 0; the footer says so). */
  removeBlocked: boolean;
  onRemove(allocation: Allocation): void;
}

export function AllocationRow({ allocation, removeBlocked, onRemove }: AllocationRowProps) {
  const { id, permissions } = useServer();
  const makePrimary = useMakeAllocationPrimary(id);
  const name = allocationName(allocation);
  return (
    <li class="card row allocation" aria-label={`Allocation ${name}`}>
      <div class="allocation-address">
        <span class="row-title mono">{allocation.ip_alias ?? allocation.ip}</span>
        <span class="muted small">{allocation.ip_alias ? `Hostname for ${allocation.ip}` : 'IP address'}</span>
      </div>
      <div class="allocation-port">
        <span class="row-title mono">{allocation.port}</span>
        <span class="muted small">Port</span>
      </div>
      <NotesField allocation={allocation} name={name} editable={permissions.can('allocation.update')} />
      <div class="row-actions allocation-actions">
        {allocation.is_default ? (
          <span class="badge ok">Primary</span>
        ) : (
          <>
            <button
              type="button"
              aria-label={`Make primary ${name}`}
              disabled={!permissions.can('allocation.update') || makePrimary.isPending}
              onClick={() => makePrimary.mutate(allocation.id)}
            >
              Make primary
            </button>
            <button
              type="button"
              class="danger"
              aria-label={`Remove allocation ${name}`}
              aria-describedby={removeBlocked ? ALLOCATION_REASON_ID : undefined}
              disabled={!permissions.can('allocation.delete') || removeBlocked}
              onClick={() => onRemove(allocation)}
            >
              Remove
            </button>
          </>
        )}
      </div>
      <ErrorText error={makePrimary.error} />
    </li>
  );
}

/** The notes as an input that saves itself when left or on Enter, once per change. */
function NotesField({ allocation, name, editable }: { allocation: Allocation; name: string; editable: boolean }) {
  const { id } = useServer();
  const save = useSetAllocationNotes(id);
  const stored = allocation.notes ?? '';
  const [draft, setDraft] = useState(stored);
  useEffect(() => setDraft(stored), [stored]);
  const commit = () => {
    if (draft === stored || save.isPending) return;
    save.mutate({ id: allocation.id, notes: draft });
  };
  const errorId = `allocation-${allocation.id}-notes-error`;
  return (
    <form
      class="allocation-notes"
      onSubmit={(event) => {
        event.preventDefault();
        commit();
      }}
    >
      <label>
        <span class="muted small">Notes</span>
        <input
          value={draft}
          maxLength={256}
          placeholder="Notes"
          aria-label={`Notes for ${name}`}
          disabled={!editable}
          aria-invalid={save.isError ? 'true' : undefined}
          aria-describedby={save.isError ? errorId : undefined}
          onInput={(event) => setDraft(event.currentTarget.value)}
          onBlur={commit}
        />
      </label>
      <div id={errorId}>
        <ErrorText error={save.error} />
      </div>
      {save.isPending && (
        <span class="muted small" role="status">
          Saving…
        </span>
      )}
      {save.isSuccess && !save.isPending && draft === stored && (
        <span class="muted small" role="status">
          Saved
        </span>
      )}
    </form>
  );
}
