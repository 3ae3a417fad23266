/** The server's backups, each with its status, size, checksum and ignored files, and its Lock, Restore and Delete buttons. */
import { useToggleBackupLock } from '../../api/backups';
import type { Backup } from '../../api/types';
import { bytes, dateTime } from '../../lib/format';
import type { Permissions } from '../../lib/permissions';
import { ErrorText } from '../ui';

function statusOf(backup: Backup): { label: string; tone: string } {
  if (backup.completed_at === null) return { label: 'In progress', tone: 'warn' };
  return backup.is_successful ? { label: 'Completed', tone: 'ok' } : { label: 'Failed', tone: 'bad' };
}

interface BackupListProps {
  server: string;
  backups: readonly Backup[];
  permissions: Permissions;
  /** A restore runs (no second one may start). */
  restoring: boolean;
  onRestore(backup: Backup): void;
  onDelete(backup: Backup): void;
}

export function BackupList({ backups, ...rest }: BackupListProps) {
  return (
    <ul class="rows" aria-label="Backups">
      {backups.map((backup) => (
        <BackupRow key={backup.uuid} backup={backup} {...rest} />
      ))}
    </ul>
  );
}

function BackupRow({
  server,
  backup,
  permissions,
  restoring,
  onRestore,
  onDelete,
}: Omit<BackupListProps, 'backups'> & { backup: Backup }) {
  const lock = useToggleBackupLock(server);
  const status = statusOf(backup);
  const done = backup.completed_at !== null;
  return (
    <li class="card row">
      <div class="row-main">
        <span class="row-title">{backup.name}</span>
        <span class="muted">
          {dateTime(backup.created_at)} · {done ? bytes(backup.bytes) : '…'}
        </span>
        {backup.checksum && <span class="mono muted wrap small">{backup.checksum}</span>}
        {backup.ignored_files.length > 0 && <span class="muted small">Ignoring {backup.ignored_files.join(', ')}</span>}
      </div>
      <div class="row-meta">
        <span class={`badge ${status.tone}`}>{status.label}</span>
        {backup.is_locked && <span class="badge">Locked</span>}
      </div>
      <div class="row-actions">
        <button
          type="button"
          aria-label={`${backup.is_locked ? 'Unlock' : 'Lock'} backup ${backup.name}`}
          disabled={!permissions.can('backup.delete') || !done || lock.isPending}
          onClick={() => lock.mutate(backup.uuid)}
        >
          {backup.is_locked ? 'Unlock' : 'Lock'}
        </button>
        <button
          type="button"
          aria-label={`Restore backup ${backup.name}`}
          disabled={!permissions.can('backup.restore') || !backup.is_successful || restoring}
          onClick={() => onRestore(backup)}
        >
          Restore
        </button>
        <button
          type="button"
          class="danger"
          aria-label={`Delete backup ${backup.name}`}
          disabled={!permissions.can('backup.delete') || backup.is_locked}
          onClick={() => onDelete(backup)}
        >
          Delete
        </button>
      </div>
      <ErrorText error={lock.error} />
    </li>
  );
}
