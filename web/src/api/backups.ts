/**
 * A server's backups (docs/reference/backups-and-restores.md,
 * docs/reference/servers.md#the-server-routes): the list (asked again while
 * one is in progress), create, lock and unlock, delete, restore, and a
 * started restore followed to its end and its outcome.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'preact/hooks';
import { latestActivity } from './activity';
import { del, get, post, query } from './client';
import { serverKey, serverUrl } from './servers';
import type { ActivityEntry, Backup, List, Server } from './types';

export type BackupList = List<{ attributes: Backup }>;

export const backupsKey = (server: string) => ['backups', server] as const;
/** Every restore watch of a server (one per restore started). */
export const restoreWatchKey = (server: string) => ['restore-watch', server] as const;

const backupUrl = (server: string, backup = '', action = '') =>
  serverUrl(server, ['backups', backup, action].filter(Boolean).join('/'));

export function useBackups(server: string) {
  return useQuery({
    queryKey: backupsKey(server),
    queryFn: ({ signal }) => get<BackupList>(backupUrl(server) + query({ per_page: 50 }), signal),
    refetchInterval: (q) => (q.state.data?.data.some(({ attributes }) => attributes.completed_at === null) ? 1_500 : false),
  });
}

function useBackupMutation<Input>(server: string, send: (input: Input) => Promise<unknown>) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: send,
    onSuccess: () => client.invalidateQueries({ queryKey: backupsKey(server) }),
  });
}

export interface NewBackup {
  name: string;
  /** As typed: one pattern per line; blank lines and surrounding spaces are dropped. */
  ignored: string;
  isLocked: boolean;
}

export function useCreateBackup(server: string) {
  return useBackupMutation(server, ({ name, ignored, isLocked }: NewBackup) =>
    post(backupUrl(server), {
      name: name.trim(),
      ignored: ignored
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean)
        .join('\n'),
      is_locked: isLocked,
    }),
  );
}

/** POST /backups/{backup}/lock flips the lock. */
export function useToggleBackupLock(server: string) {
  return useBackupMutation(server, (backup: string) => post(backupUrl(server, backup, 'lock')));
}

export function useDeleteBackup(server: string) {
  return useBackupMutation(server, (backup: string) => del(backupUrl(server, backup)));
}

/** 202: the server's status is `restoring_backup` until the restore ends. */
export function useRestoreBackup(server: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ backup, truncate }: { backup: string; truncate: boolean }) =>
      post(backupUrl(server, backup, 'restore'), { truncate }),
    onSuccess: () => client.invalidateQueries({ queryKey: serverKey(server) }),
  });
}

export interface StartedRestore {
  /** The backup's name, for the page's sentences. */
  backup: string;
  since: number;
}

export type RestoreProgress = { phase: 'running' } | { phase: 'done'; failed: boolean; reason: string | null };

/**
 * How the restore ended, from the activity log. A user who may not read it (or a log that cannot be
 * read now) is told it completed: the server's status has already left `restoring_backup`.
 */
async function restoreOutcome(server: string, signal: AbortSignal): Promise<{ failed: boolean; reason: string | null }> {
  let entry: ActivityEntry | null;
  try {
    entry = await latestActivity(server, 'server:backup.restore-', signal);
  } catch {
    return { failed: false, reason: null };
  }
  const failed = entry?.event === 'server:backup.restore-failed';
  const reason = entry?.properties.reason;
  return { failed, reason: failed && typeof reason === 'string' ? reason : null };
}

/**
 * A restore started from this page, followed by asking for the server every second until its status
 * leaves `restoring_backup`; then its outcome. Null when none was started.
 */
export function useRestoreProgress(server: string, started: StartedRestore | null): RestoreProgress | null {
  const client = useQueryClient();
  const since = started?.since ?? 0;
  const watch = useQuery({
    queryKey: [...restoreWatchKey(server), since],
    queryFn: ({ signal }) => get<Server>(serverUrl(server), signal),
    enabled: started !== null,
    refetchInterval: (q) => (q.state.data?.attributes.status === 'restoring_backup' || !q.state.data ? 1_000 : false),
  });
  const finished = started !== null && watch.data !== undefined && watch.data.attributes.status !== 'restoring_backup';
  const outcome = useQuery({
    queryKey: ['restore-outcome', server, since],
    queryFn: ({ signal }) => restoreOutcome(server, signal),
    enabled: finished,
    staleTime: Infinity,
  });
  // Over: the server object (its status, the header's notice) is stale.
  useEffect(() => {
    if (finished) void client.invalidateQueries({ queryKey: serverKey(server) });
  }, [finished, client, server]);
  if (started === null) return null;
  return outcome.data ? { phase: 'done', ...outcome.data } : { phase: 'running' };
}
