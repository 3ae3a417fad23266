/**
 * What happened on a server that live consoles announce (docs/reference/power-and-console.md#websocket) but that
 * comes from elsewhere than the daemon's process events: a backup that ended,
 * a restore that ended, an install's start, output and end (docs/reference/eggs-and-installs.md).
 * In-process only: with several instances, only the
 * instance doing the work tells its own sockets (docs/DECISIONS.md).
 */

/** Wings' `backup completed` payload. */
export interface BackupCompletedEvent {
  readonly type: 'backup-completed';
  readonly serverUuid: string;
  readonly backupUuid: string;
  readonly successful: boolean;
  /** Hex sha1 of the archive; empty when the backup failed. */
  readonly checksum: string;
  readonly bytes: number;
}

export interface RestoreCompletedEvent {
  readonly type: 'restore-completed';
  readonly serverUuid: string;
  readonly successful: boolean;
}

/** An install (docs/reference/eggs-and-installs.md) began: Wings' `install started`. */
export interface InstallStartedEvent {
  readonly type: 'install-started';
  readonly serverUuid: string;
}

/** One line of an install's output: Wings' `install output`. */
export interface InstallOutputEvent {
  readonly type: 'install-output';
  readonly serverUuid: string;
  readonly line: string;
}

/** An install ended: Wings' `install completed`; `successful` false when the status became `install_failed`. */
export interface InstallCompletedEvent {
  readonly type: 'install-completed';
  readonly serverUuid: string;
  readonly successful: boolean;
}

export type ServerEvent =
  BackupCompletedEvent | RestoreCompletedEvent | InstallStartedEvent | InstallOutputEvent | InstallCompletedEvent;

export class ServerEvents {
  private readonly listeners = new Set<(event: ServerEvent) => void>();

  constructor(private readonly onListenerError: (err: unknown) => void = () => {}) {}

  subscribe(listener: (event: ServerEvent) => void): () => void {
    // A wrapper per call, so that subscribing the same function twice needs two unsubscribes.
    const entry = (event: ServerEvent) => listener(event);
    this.listeners.add(entry);
    return () => this.listeners.delete(entry);
  }

  /** Never throws: a failing listener must not fail the backup that announced itself. */
  emit(event: ServerEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }
}
