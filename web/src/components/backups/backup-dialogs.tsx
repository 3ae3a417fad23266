/**
 * The two questions asked before a backup changes anything: restore (with
 * "Delete all files before restoring") and delete. Each is shown while its
 * backup is chosen, so every opening starts unticked and without an error.
 */
import { useState } from 'preact/hooks';
import { useDeleteBackup, useRestoreBackup } from '../../api/backups';
import type { Backup } from '../../api/types';
import { ConfirmDialog } from '../ui';

interface DialogProps {
  server: string;
  backup: Backup;
  onClose(): void;
}

export function RestoreDialog({ server, backup, onClose, onStarted }: DialogProps & { onStarted(): void }) {
  const restore = useRestoreBackup(server);
  const [truncate, setTruncate] = useState(false);
  return (
    <ConfirmDialog
      open
      title={`Restore “${backup.name}”?`}
      confirmLabel="Restore"
      danger={truncate}
      busy={restore.isPending}
      error={restore.error}
      onConfirm={() => restore.mutate({ backup: backup.uuid, truncate }, { onSuccess: onStarted })}
      onCancel={onClose}
    >
      <p>The server is stopped and the backup's files are written over its own.</p>
      <label class="check">
        <input type="checkbox" checked={truncate} onChange={(e) => setTruncate(e.currentTarget.checked)} />
        Delete all files before restoring
      </label>
    </ConfirmDialog>
  );
}

export function DeleteBackupDialog({ server, backup, onClose }: DialogProps) {
  const remove = useDeleteBackup(server);
  return (
    <ConfirmDialog
      open
      title={`Delete “${backup.name}”?`}
      confirmLabel="Delete"
      danger
      busy={remove.isPending}
      error={remove.error}
      onConfirm={() => remove.mutate(backup.uuid, { onSuccess: onClose })}
      onCancel={onClose}
    >
      <p>The backup's archive is removed for good.</p>
    </ConfirmDialog>
  );
}
