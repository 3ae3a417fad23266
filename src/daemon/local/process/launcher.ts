/**
 * How a server's startup command is run: the seam between the supervisor's
 * bookkeeping (claims, pid files, states, stops) and the operating system.
 * Two implementations: a plain process group (group-launcher.ts, docs/reference/schedules.md#running-schedules) and
 * a runc container (container/container-launcher.ts, docs/reference/containment.md). Either way the
 * started process is the leader of its process group (pid = pgid), which the
 * pid files record, and the supervisor signals what it started through
 * `signalRecorded` (process-group.ts), which knows both.
 */
import type { Writable } from 'node:stream';
import type { ServerAllocation, ServerLimits } from '../../daemon.js';
import type { RecordedGroup } from './process-group.js';

/** What a launcher needs of a server (a SupervisedServer is one). */
export interface LaunchTarget {
  readonly uuid: string;
  /** The folder the process runs in; it must exist. */
  readonly volumeDir: string;
  readonly limits?: ServerLimits;
  /** Published into a confined server's network (docs/reference/network-and-allocations.md), primary first; SERVER_IP/SERVER_PORT either way. */
  readonly allocations?: readonly ServerAllocation[];
  /** The uid and gid a confined server runs as (its own, docs/reference/containment.md); absent = SERVER_UID. */
  readonly uid?: number;
  /** The image a confined server's box runs on (docs/reference/eggs-and-installs.md); absent or null = `host`. */
  readonly image?: string | null;
  /** More environment from the panel (docs/reference/eggs-and-installs.md, server-env.ts); it never replaces HOME, PATH, USER or P_SERVER_UUID. */
  readonly environment?: Readonly<Record<string, string>>;
}

export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface LaunchedProcess {
  /** The leader (a container's first process), as the host sees it; also the process group id. */
  readonly pid: number;
  /** Our end of its standard input (the console). */
  readonly stdin: Writable | null;
  /** Settles when the leader has exited (for a container: when every process in it has); never rejects. */
  readonly exited: Promise<ProcessExit>;
  /** The runc container, or null for a plain process group. */
  readonly container: string | null;
  /**
   * Ends what the service runs for the process (the log's size check, the
   * exit watch) without touching the process: after its exit, or when the
   * service leaves it running (SERVERS_ON_SHUTDOWN=keep).
   */
  stopWatching(): void;
}

/** A server's console log: where its output goes, and the size it is kept under (CONSOLE_LOG_MB). */
export interface ConsoleLogTarget {
  readonly path: string;
  readonly maxBytes: number;
  /** How often a log the process writes itself is checked for rotation (console-log.ts). */
  readonly checkMs: number;
}

/** Figures for `/resources`, summed over every process of the server. */
export interface UsageSample {
  readonly memoryBytes: number;
  /** CPU time used so far, in nanoseconds. */
  readonly cpuUsageNs: number;
  /** Bytes through the server's own network (docs/reference/network-and-allocations.md); absent where it has none (the host's network). */
  readonly networkRxBytes?: number;
  readonly networkTxBytes?: number;
}

export interface ServerLauncher {
  /** Whether processes run confined (docs/reference/containment.md): what `/health` reports. */
  readonly confined: boolean;
  /**
   * Starts the startup command with its output going to the console log;
   * resolves once it runs. Called only under the server's pid-file claim.
   * When it throws, nothing of the server runs.
   */
  launch(target: LaunchTarget, startup: string, log: ConsoleLogTarget): Promise<LaunchedProcess>;
  /**
   * Takes over a server a dead instance left running (docs/reference/power-and-console.md#servers-outlive-the-service), under that
   * server's pid file: its console, its exit. Null when it cannot be taken
   * over (a plain process group, whose output and stdin died with its
   * service; a container whose monitor is gone): it is then stopped.
   */
  adopt(serverUuid: string, record: RecordedGroup): LaunchedProcess | null;
  /**
   * Once a server's leader has exited (or a dead instance's server was
   * stopped): removes what is left of it (a container, its bundle) and says
   * whether the kernel killed it for using more memory than its limit.
   */
  release(serverUuid: string, record: RecordedGroup): Promise<{ outOfMemory: boolean }>;
  /** Memory and CPU used by the server's processes now, or null when none runs. */
  usage(serverUuid: string, record: RecordedGroup): UsageSample | null;
  /**
   * At the daemon's start, after the pid files were reaped: removes
   * containers and bundles no pid file accounts for (a crash between
   * `runc run` and the pid file). `owned` says whether a pid file names a
   * server.
   */
  sweep(owned: (serverUuid: string) => boolean): Promise<void>;
}
