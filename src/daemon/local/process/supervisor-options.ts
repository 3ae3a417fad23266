import type { ServerAllocation, ServerLimits, ServerState } from '../../daemon.js';
import type { ServerLauncher } from './launcher.js';
import { noop } from './helpers.js';

/** The part of a pino logger the supervisor uses (pino's and Fastify's loggers both fit). */
export interface ProcessLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** What the supervisor needs to know about a server to run it. */
export interface SupervisedServer {
  readonly uuid: string;
  readonly startup: string | null;
  readonly stopCommand: string | null;
  /** The folder the process runs in; it must exist. */
  readonly volumeDir: string;
  /** Applied by a confining launcher (docs/reference/containment.md); absent = none. */
  readonly limits?: ServerLimits;
  /** Primary first (docs/reference/network-and-allocations.md); absent = none. */
  readonly allocations?: readonly ServerAllocation[];
  /** The uid and gid a confining launcher runs it as (its own, docs/reference/containment.md); absent = SERVER_UID. */
  readonly uid?: number;
  /** The image a confining launcher runs it on (docs/reference/eggs-and-installs.md); absent or null = `host`. */
  readonly image?: string | null;
  /** More environment for the process (docs/reference/eggs-and-installs.md, server-env.ts). */
  readonly environment?: Readonly<Record<string, string>>;
  /** `starting` until the console prints one of these (done-lines.ts); absent or empty = `running` once spawned. */
  readonly doneLines?: readonly string[];
  /**
   * Runs before each spawn, under the server's claim (after a restart's stop):
   * the egg's config files (docs/reference/eggs-and-installs.md). A failure fails the start; it should not throw.
   */
  readonly beforeLaunch?: () => Promise<void>;
}

export interface ProcessSupervisorOptions {
  /** Holds `<uuid>.log`: each process's standard output and error, appended. */
  logDir: string;
  /** Holds `<uuid>.pid` for each running process, so a later instance can reap what a crashed one left. */
  runDir: string;
  /** How long a stop waits for the process to exit before it is killed (default 10 s). */
  stopGraceMs?: number;
  /** Size at which `<uuid>.log` is rotated to `<uuid>.log.1` (default 50 MiB; CONSOLE_LOG_MB). */
  consoleLogBytes?: number;
  /** How often a running server's log size is checked (default 1 s). */
  consoleLogCheckMs?: number;
  logger?: ProcessLogger;
  /** How processes are run: a plain process group (the default) or a container (docs/reference/containment.md). */
  launcher?: ServerLauncher;
  /** Follows a server's console for its done lines (the daemon's shared console tails); default: tails of its own. */
  watchConsole?: ConsoleWatch;
}

/** Follows a server's console: `onLine` gets each line printed from now on; the result stops following. */
export type ConsoleWatch = (serverUuid: string, onLine: (line: string) => void) => () => void;

export type StateListener = (serverUuid: string, state: ServerState) => void;

export const silentLogger: ProcessLogger = { info: noop, warn: noop, error: noop };

/** A uuid becomes a file name under logDir and runDir; it must not be able to point elsewhere. */
export function assertSafeUuid(serverUuid: string): void {
  if (!isSafeUuid(serverUuid)) throw new Error(`"${serverUuid}" is not a valid server uuid.`);
}

export function isSafeUuid(serverUuid: string): boolean {
  return /^[A-Za-z0-9_-]+$/.test(serverUuid);
}
