/** A restore's progress while it runs (started here or elsewhere), then how the one started here ended, until dismissed. */
import type { RestoreProgress, StartedRestore } from '../../api/backups';

interface RestoreStatusProps {
  started: StartedRestore | null;
  progress: RestoreProgress | null;
  /** The server's status says a restore runs (perhaps started by someone else). */
  serverRestoring: boolean;
  onDismiss(): void;
}

export function RestoreStatus({ started, progress, serverRestoring, onDismiss }: RestoreStatusProps) {
  if (started && progress?.phase === 'done') {
    return (
      <div class={`card ${progress.failed ? 'bad' : 'ok'}`} role="status">
        <p>
          {progress.failed
            ? `The restore of “${started.backup}” failed${progress.reason ? `: ${progress.reason}` : ''}. The server's files are as they were.`
            : `The restore of “${started.backup}” is complete.`}
        </p>
        <button type="button" onClick={onDismiss}>
          Dismiss
        </button>
      </div>
    );
  }
  if (!(started && progress?.phase === 'running') && !serverRestoring) return null;
  return (
    <div class="card restore-progress" role="status">
      <p>
        {started && progress?.phase === 'running' ? `Restoring “${started.backup}”…` : 'A backup is being restored…'} Power and
        console are unavailable until it is done.
      </p>
      <progress aria-label="Restore progress" />
    </div>
  );
}
