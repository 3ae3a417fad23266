/**
 * How a server's startup command is run: the seam between the supervisor's
 * bookkeeping (claims, pid files, states, stops) and the operating system.
 * Two implementations: a plain process group (group-launcher.ts, SPEC 7) and
 * a runc container (container/container-launcher.ts, SPEC 10). Either way the
 * started process is the leader of its process group (pid = pgid), which the
 * pid files record, and the supervisor signals what it started through
 * `signalRecorded` (process-group.ts), which knows both.
 */
import type { Writable } from 'node:stream';
import type { ServerLimits } from '../../daemon.js';
import type { RecordedGroup } from './process-group.js';

/** What a launcher needs of a server (a SupervisedServer is one). */
export interface LaunchTarget {
  readonly uuid: string;
  /** The folder the process runs in; it must exist. */
  readonly volumeDir: string;
  readonly limits?: ServerLimits;
  /** The uid and gid a confined server runs as (its own, SPEC 10); absent = SERVER_UID. */
  readonly uid?: number;
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
}

/** Figures for `/resources`, summed over every process of the server. */
export interface UsageSample {
  readonly memoryBytes: number;
  /** CPU time used so far, in nanoseconds. */
  readonly cpuUsageNs: number;
}

export interface ServerLauncher {
  /** Whether processes run confined (SPEC 10): what `/health` reports. */
  readonly confined: boolean;
  /**
   * Starts the startup command with `logFd` (the console log, opened for
   * append) as its standard output and error; resolves once it runs. Called
   * only under the server's pid-file claim. When it throws, nothing of the
   * server runs.
   */
  launch(target: LaunchTarget, startup: string, logFd: number): Promise<LaunchedProcess>;
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
