import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'preact/hooks';
import { backupsKey, restoreWatchKey, useBackups, useRestoreProgress, type StartedRestore } from '../api/backups';
import type { Backup } from '../api/types';
import { BackupList } from '../components/backups/backup-list';
import { DeleteBackupDialog, RestoreDialog } from '../components/backups/backup-dialogs';
import { CreateBackupForm } from '../components/backups/create-backup-form';
import { RestoreStatus } from '../components/backups/restore-status';
import { ErrorText, Loading } from '../components/ui';
import { useServer, useSocketFrames } from '../lib/server-context';

/**
 * Backups (docs/reference/backups-and-restores.md#restoring, docs/reference/servers.md#the-server-routes):
 * create, lock, delete, restore with a truncate confirmation and its progress.
 */
export function BackupsSection() {
  const { id, server, permissions, socket } = useServer();
  const client = useQueryClient();
  const backups = useBackups(id);
  const [restoreAsked, setRestoreAsked] = useState<Backup | null>(null);
  const [deleteAsked, setDeleteAsked] = useState<Backup | null>(null);
  const [started, setStarted] = useState<StartedRestore | null>(null);
  const progress = useRestoreProgress(id, started);

  // The socket says when a backup or a restore is done; the list and the restore's watch ask again then.
  useSocketFrames(socket, (frame) => {
    if (frame.event === 'backup completed') void client.invalidateQueries({ queryKey: backupsKey(id) });
    if (frame.event === 'backup restore completed') void client.invalidateQueries({ queryKey: restoreWatchKey(id) });
  });

  const serverRestoring = server.attributes.status === 'restoring_backup';
  const list = backups.data?.data.map(({ attributes }) => attributes);
  const limit = server.attributes.feature_limits.backups;
  // Failed backups do not count against the limit; those in progress do.
  const counted = list?.filter((backup) => backup.is_successful || !backup.completed_at).length;
  return (
    <section aria-labelledby="backups-title">
      <h2 id="backups-title">Backups</h2>
      <RestoreStatus started={started} progress={progress} serverRestoring={serverRestoring} onDismiss={() => setStarted(null)} />
      <CreateBackupForm
        server={id}
        canCreate={permissions.can('backup.create')}
        count={counted === undefined ? '' : `${counted} of ${limit} backups`}
      />
      {backups.isPending && <Loading what="backups" />}
      <ErrorText error={backups.error} />
      {list?.length === 0 && <p class="muted">No backups yet.</p>}
      {list && list.length > 0 && (
        <BackupList
          server={id}
          backups={list}
          permissions={permissions}
          restoring={serverRestoring || progress?.phase === 'running'}
          onRestore={setRestoreAsked}
          onDelete={setDeleteAsked}
        />
      )}
      <RestoreDialog
        server={id}
        backup={restoreAsked}
        onClose={() => setRestoreAsked(null)}
        onStarted={(backup) => {
          setStarted({ backup: backup.name, since: Date.now() });
          setRestoreAsked(null);
        }}
      />
      <DeleteBackupDialog server={id} backup={deleteAsked} onClose={() => setDeleteAsked(null)} />
    </section>
  );
}
