import type { SupervisedServer } from './supervisor-options.js';

/** A console line was sent to a server that has no running process. */
export class ServerNotRunningError extends Error {
  constructor(readonly serverUuid: string) {
    super(`Server ${serverUuid} is not running.`);
    this.name = 'ServerNotRunningError';
  }
}

/** A console line was refused because the process is not reading its standard input and enough is already waiting (docs/reference/backups-and-restores.md#durability). */
export class ConsoleBusyError extends Error {
  constructor(readonly serverUuid: string) {
    super(`Server ${serverUuid} is not reading its console: too much input is already waiting.`);
    this.name = 'ConsoleBusyError';
  }
}

/** A start was asked of a server created without a startup command (it has a volume but no process). */
export class NoStartupCommandError extends Error {
  constructor(readonly serverUuid: string) {
    super(`Server ${serverUuid} has no startup command.`);
    this.name = 'NoStartupCommandError';
  }
}

export function shuttingDown(): Error {
  return new Error('The process supervisor is shutting down; no new server processes are started.');
}

export function startFailure(target: SupervisedServer, err: unknown): Error {
  const reason = err instanceof Error ? err.message : String(err);
  return new Error(`Could not start server ${target.uuid} (in ${target.volumeDir}): ${reason}`, { cause: err });
}
