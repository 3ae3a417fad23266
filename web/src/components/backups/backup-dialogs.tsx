/**
 * The two questions asked before a backup changes anything: restore (with
 * "Delete all files before restoring") and delete. Each stays mounted, open
 * while a backup is chosen (closing it hands the focus back to the button
 * that opened it); each opening starts unticked and without an old error.
 */
import { useEffect, useState } from 'preact/hooks';
import { useDeleteBackup, useRestoreBackup } from '../../api/backups';
import type { Backup } from '../../api/types';
import { ConfirmDialog } from '../ui';

interface DialogProps {
  server: string;
  /** The backup asked about; null while the dialog is closed. */
  backup: Backup | null;
  onClose(): void;
}

export function RestoreDialog({ server, backup, onClose, onStarted }: DialogProps & { onStarted(backup: Backup): void }) {
  const restore = useRestoreBackup(server);
  const { reset } = restore;
  const [truncate, setTruncate] = useState(false);
  useEffect(() => {
    setTruncate(false);
    reset();
  }, [backup, reset]);
  return (
    <ConfirmDialog
      open={backup !== null}
      title={`Restore “${backup?.name ?? ''}”?`}
      confirmLabel="Restore"
      danger={truncate}
      busy={restore.isPending}
      error={restore.error}
      onConfirm={() => backup && restore.mutate({ backup: backup.uuid, truncate }, { onSuccess: () => onStarted(backup) })}
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
  const { reset } = remove;
  useEffect(() => reset(), [backup, reset]);
  return (
    <ConfirmDialog
      open={backup !== null}
      title={`Delete “${backup?.name ?? ''}”?`}
      confirmLabel="Delete"
      danger
      busy={remove.isPending}
      error={remove.error}
      onConfirm={() => backup && remove.mutate(backup.uuid, { onSuccess: onClose })}
      onCancel={onClose}
    >
      <p>The backup's archive is removed for good.</p>
    </ConfirmDialog>
  );
}
