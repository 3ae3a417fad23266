import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'preact/hooks';
import { del, get, post, query } from '../api/client';
import type { ActivityEntry, Backup, List, Server } from '../api/types';
import { ConfirmDialog, ErrorText, Loading } from '../components/ui';
import { bytes, dateTime } from '../lib/format';
import { useServer, useSocketFrames } from '../lib/server-context';
import { serverKey } from '../api/servers';

/** Backups (docs/reference/backups-and-restores.md#restoring, docs/reference/servers.md#the-server-routes): create, lock, delete, restore with a truncate confirmation and its progress. */

type Restore =
  { backup: string; phase: 'running'; since: number } | { backup: string; phase: 'done'; failed: boolean; reason: string | null };

function statusOf(backup: Backup): { label: string; tone: string } {
  if (backup.completed_at === null) return { label: 'In progress', tone: 'warn' };
  return backup.is_successful ? { label: 'Completed', tone: 'ok' } : { label: 'Failed', tone: 'bad' };
}

export function BackupsSection() {
  const { id, server, permissions, socket } = useServer();
  const client = useQueryClient();
  const base = `/api/client/servers/${encodeURIComponent(id)}/backups`;
  const key = ['backups', id];
  const backups = useQuery({
    queryKey: key,
    queryFn: ({ signal }) => get<List<{ attributes: Backup }>>(`${base}?per_page=50`, signal),
    refetchInterval: (q) => (q.state.data?.data.some(({ attributes }) => attributes.completed_at === null) ? 1_500 : false),
  });
  const [name, setName] = useState('');
  const [ignored, setIgnored] = useState('');
  const [locked, setLocked] = useState(false);
  const [createError, setCreateError] = useState<unknown>(null);
  const [creating, setCreating] = useState(false);
  const [rowError, setRowError] = useState<{ backup: string; error: unknown } | null>(null);
  const [confirmRestore, setConfirmRestore] = useState<Backup | null>(null);
  const [truncate, setTruncate] = useState(false);
  const [restoreError, setRestoreError] = useState<unknown>(null);
  const [confirmDelete, setConfirmDelete] = useState<Backup | null>(null);
  const [deleteError, setDeleteError] = useState<unknown>(null);
  const [restore, setRestore] = useState<Restore | null>(null);

  const refresh = () => client.invalidateQueries({ queryKey: key });
  // A restore started here is watched by polling the server's status from the moment it was accepted.
  const watchKey = ['restore-watch', id, restore?.phase === 'running' ? restore.since : 0];
  const watch = useQuery({
    queryKey: watchKey,
    queryFn: ({ signal }) => get<Server>(`/api/client/servers/${encodeURIComponent(id)}`, signal),
    enabled: restore?.phase === 'running',
    refetchInterval: 1_000,
  });
  useSocketFrames(socket, (frame) => {
    if (frame.event === 'backup completed') void refresh();
    if (frame.event === 'backup restore completed') void client.invalidateQueries({ queryKey: ['restore-watch', id] });
  });

  // The restore ends when the server's status leaves restoring_backup.
  const restoring = server.attributes.status === 'restoring_backup';
  const watchedStatus = watch.data?.attributes.status;
  useEffect(() => {
    if (restore?.phase !== 'running' || watchedStatus === undefined || watchedStatus === 'restoring_backup') return;
    let cancelled = false;
    void outcome(id).then((result) => {
      if (cancelled) return;
      setRestore({ backup: restore.backup, phase: 'done', ...result });
      void client.invalidateQueries({ queryKey: serverKey(id) });
    });
    return () => {
      cancelled = true;
    };
  }, [restore, watchedStatus]);

  const create = async (event: Event) => {
    event.preventDefault();
    setCreating(true);
    setCreateError(null);
    try {
      const patterns = ignored
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean)
        .join('\n');
      await post(base, { name: name.trim(), ignored: patterns, is_locked: locked });
      setName('');
      setIgnored('');
      setLocked(false);
      await refresh();
    } catch (err) {
      setCreateError(err);
    } finally {
      setCreating(false);
    }
  };

  const act = async (backup: Backup, run: () => Promise<unknown>) => {
    setRowError(null);
    try {
      await run();
      await refresh();
    } catch (error) {
      setRowError({ backup: backup.uuid, error });
    }
  };

  const startRestore = async () => {
    const backup = confirmRestore;
    if (!backup) return;
    setRestoreError(null);
    try {
      await post(`${base}/${backup.uuid}/restore`, { truncate });
      setConfirmRestore(null);
      setRestore({ backup: backup.name, phase: 'running', since: Date.now() });
      await client.invalidateQueries({ queryKey: serverKey(id) });
    } catch (err) {
      setRestoreError(err);
    }
  };

  const remove = async () => {
    const backup = confirmDelete;
    if (!backup) return;
    setDeleteError(null);
    try {
      await del(`${base}/${backup.uuid}`);
      setConfirmDelete(null);
      await refresh();
    } catch (err) {
      setDeleteError(err);
    }
  };

  const limit = server.attributes.feature_limits.backups;
  const canCreate = permissions.can('backup.create');
  return (
    <section aria-labelledby="backups-title">
      <h2 id="backups-title">Backups</h2>
      {restore?.phase === 'running' && (
        <div class="card restore-progress" role="status">
          <p>Restoring “{restore.backup}”… Power and console are unavailable until it is done.</p>
          <progress aria-label="Restore progress" />
        </div>
      )}
      {restoring && restore?.phase !== 'running' && (
        <div class="card restore-progress" role="status">
          <p>A backup is being restored… Power and console are unavailable until it is done.</p>
          <progress aria-label="Restore progress" />
        </div>
      )}
      {restore?.phase === 'done' && (
        <div class={`card ${restore.failed ? 'bad' : 'ok'}`} role="status">
          <p>
            {restore.failed
              ? `The restore of “${restore.backup}” failed${restore.reason ? `: ${restore.reason}` : ''}. The server's files are as they were.`
              : `The restore of “${restore.backup}” is complete.`}
          </p>
          <button type="button" onClick={() => setRestore(null)}>
            Dismiss
          </button>
        </div>
      )}
      <form class="card stack" aria-labelledby="new-backup-title" onSubmit={(event) => void create(event)}>
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
        <ErrorText error={createError} />
        <div class="actions">
          <span class="muted">
            {backups.data
              ? `${backups.data.data.filter(({ attributes }) => attributes.is_successful || !attributes.completed_at).length} of ${limit} backups`
              : ''}
          </span>
          <button type="submit" class="primary" disabled={creating || !canCreate}>
            Create backup
          </button>
        </div>
      </form>
      {backups.isPending && <Loading what="backups" />}
      <ErrorText error={backups.error} />
      {backups.data?.data.length === 0 && <p class="muted">No backups yet.</p>}
      {backups.data && backups.data.data.length > 0 && (
        <ul class="rows" aria-label="Backups">
          {backups.data.data.map(({ attributes: backup }) => {
            const status = statusOf(backup);
            const done = backup.completed_at !== null;
            return (
              <li key={backup.uuid} class="card row">
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
                    disabled={!permissions.can('backup.delete') || !done}
                    onClick={() => void act(backup, () => post(`${base}/${backup.uuid}/lock`))}
                  >
                    {backup.is_locked ? 'Unlock' : 'Lock'}
                  </button>
                  <button
                    type="button"
                    aria-label={`Restore backup ${backup.name}`}
                    disabled={
                      !permissions.can('backup.restore') || !backup.is_successful || restoring || restore?.phase === 'running'
                    }
                    onClick={() => {
                      setTruncate(false);
                      setRestoreError(null);
                      setConfirmRestore(backup);
                    }}
                  >
                    Restore
                  </button>
                  <button
                    type="button"
                    class="danger"
                    aria-label={`Delete backup ${backup.name}`}
                    disabled={!permissions.can('backup.delete') || backup.is_locked}
                    onClick={() => {
                      setDeleteError(null);
                      setConfirmDelete(backup);
                    }}
                  >
                    Delete
                  </button>
                </div>
                {rowError?.backup === backup.uuid && <ErrorText error={rowError.error} />}
              </li>
            );
          })}
        </ul>
      )}
      <ConfirmDialog
        open={confirmRestore !== null}
        title={`Restore “${confirmRestore?.name ?? ''}”?`}
        confirmLabel="Restore"
        danger={truncate}
        error={restoreError}
        onConfirm={() => void startRestore()}
        onCancel={() => setConfirmRestore(null)}
      >
        <p>The server is stopped and the backup's files are written over its own.</p>
        <label class="check">
          <input type="checkbox" checked={truncate} onChange={(e) => setTruncate(e.currentTarget.checked)} />
          Delete all files before restoring
        </label>
      </ConfirmDialog>
      <ConfirmDialog
        open={confirmDelete !== null}
        title={`Delete “${confirmDelete?.name ?? ''}”?`}
        confirmLabel="Delete"
        danger
        error={deleteError}
        onConfirm={() => void remove()}
        onCancel={() => setConfirmDelete(null)}
      >
        <p>The backup's archive is removed for good.</p>
      </ConfirmDialog>
    </section>
  );
}

/** How the restore ended, from the activity log when the user may read it. */
async function outcome(server: string): Promise<{ failed: boolean; reason: string | null }> {
  try {
    const latest = await get<List<{ attributes: ActivityEntry }>>(
      `/api/client/servers/${encodeURIComponent(server)}/activity${query({ per_page: 1, 'filter[event]': 'server:backup.restore-' })}`,
    );
    const entry = latest.data[0]?.attributes;
    const failed = entry?.event === 'server:backup.restore-failed';
    const reason = entry?.properties.reason;
    return { failed, reason: failed && typeof reason === 'string' ? reason : null };
  } catch {
    return { failed: false, reason: null };
  }
}
