/** The "New backup" form: a name, ignored-file patterns, locked; the count against the server's limit; the API's refusal beside it. */
import { useState } from 'preact/hooks';
import { useCreateBackup } from '../../api/backups';
import { ErrorText } from '../ui';

interface CreateBackupFormProps {
  server: string;
  canCreate: boolean;
  /** "2 of 3 backups", once the list is known. */
  count: string;
}

export function CreateBackupForm({ server, canCreate, count }: CreateBackupFormProps) {
  const create = useCreateBackup(server);
  const [name, setName] = useState('');
  const [ignored, setIgnored] = useState('');
  const [locked, setLocked] = useState(false);

  const submit = (event: Event) => {
    event.preventDefault();
    create.mutate(
      { name, ignored, isLocked: locked },
      {
        onSuccess: () => {
          setName('');
          setIgnored('');
          setLocked(false);
        },
      },
    );
  };

  return (
    <form class="card stack" aria-labelledby="new-backup-title" onSubmit={submit}>
      <h3 id="new-backup-title">New backup</h3>
      <label>
        Name
        <input
          maxLength={191}
          value={name}
          placeholder="Optional"
          disabled={!canCreate}
          onInput={(e) => setName(e.currentTarget.value)}
        />
      </label>
      <label>
        Ignored files (one pattern per line)
        <textarea
          class="mono"
          rows={3}
          value={ignored}
          disabled={!canCreate}
          onInput={(e) => setIgnored(e.currentTarget.value)}
        />
      </label>
      <label class="check">
        <input type="checkbox" checked={locked} disabled={!canCreate} onChange={(e) => setLocked(e.currentTarget.checked)} />
        Locked (cannot be deleted until unlocked)
      </label>
      <ErrorText error={create.error} />
      <div class="actions">
        <span class="muted">{count}</span>
        <button type="submit" class="primary" disabled={create.isPending || !canCreate}>
          Create backup
        </button>
      </div>
    </form>
  );
}
