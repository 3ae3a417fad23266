/**
 * docs/reference/containment.md's disk and inode limits held while a server runs: its volume is
 * measured every `intervalMs` (allocated blocks and inodes, disk-usage.ts),
 * and a server found over a limit is handed to `onExceeded` (the daemon stops
 * it), within 30 s of passing it. Measured, not a kernel quota: DATA_DIR's
 * file system here (ext4 mounted without `prjquota`/`quota`) has no project
 * quota to set, and a quota would need the host's mount options changed
 * (docs/CONTAINMENT.md, "Disk held while running").
 *
 * Confirmed before acting: a first measurement over the limit is followed,
 * `confirmDelayMs` after it ended, by a second; only when both are over is
 * the server stopped. Space taken and given back within that second (a
 * program writing a big temporary file and deleting it) is not punished;
 * space held is, so a server never holds more than its limit plus what it
 * writes in one interval, a walk and the stop.
 *
 * One volume is walked at a time, servers in turn, and the next round begins
 * `intervalMs` after the last one ended: walks never pile up however slow a
 * volume is to measure.
 */
import type { DaemonServer } from '../../daemon.js';
import { diskLimitBytes, inodeLimit, overLimit, type VolumeUsage } from '../volume/disk-usage.js';

export interface DiskWatchOptions {
  /** Between the end of one round and the start of the next. */
  readonly intervalMs?: number;
  /** Between a first over-limit measurement and the one that confirms it. */
  readonly confirmDelayMs?: number;
  /** A fresh measurement of the server's volume. */
  readonly measure: (server: DaemonServer) => Promise<VolumeUsage>;
  /** The server passed a limit (`detail` says which, with both figures); it is no longer watched. */
  readonly onExceeded: (server: DaemonServer, detail: string) => Promise<void>;
  readonly onError: (serverUuid: string, err: unknown) => void;
}

/** The console line a server stopped for passing its disk or inode limit leaves in its log (docs/reference/containment.md). */
export const DISK_LIMIT_LINE = 'server stopped: disk limit exceeded';

/** 10 s: detection (at most one interval, two walks and the confirmation) plus the stop's grace stays within docs/reference/containment.md's 30 s. */
export const DISK_WATCH_INTERVAL_MS = 10_000;
const CONFIRM_DELAY_MS = 1_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export class DiskWatch {
  private readonly watched = new Map<string, DaemonServer>();
  private timer: NodeJS.Timeout | null = null;
  private round: Promise<void> | null = null;
  private closed = false;
  private readonly intervalMs: number;
  private readonly confirmDelayMs: number;

  constructor(private readonly options: DiskWatchOptions) {
    this.intervalMs = options.intervalMs ?? DISK_WATCH_INTERVAL_MS;
    this.confirmDelayMs = options.confirmDelayMs ?? CONFIRM_DELAY_MS;
  }

  /** Watches a running server (its latest limits replace earlier ones); a server with neither limit is not watched. */
  track(server: DaemonServer): void {
    if (this.closed) return;
    if (diskLimitBytes(server.limits) === null && inodeLimit(server.limits) === null) {
      this.watched.delete(server.uuid);
      return;
    }
    this.watched.set(server.uuid, server);
    this.schedule();
  }

  untrack(serverUuid: string): void {
    this.watched.delete(serverUuid);
  }

  isWatched(serverUuid: string): boolean {
    return this.watched.has(serverUuid);
  }

  /** Stops watching; waits for a round in progress (its stops included). */
  async close(): Promise<void> {
    this.closed = true;
    this.watched.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.round;
  }

  private schedule(): void {
    if (this.timer !== null || this.round !== null || this.closed || this.watched.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.round = this.checkAll().finally(() => {
        this.round = null;
        this.schedule();
      });
    }, this.intervalMs);
    // The watch alone never keeps the service alive.
    this.timer.unref();
  }

  private async checkAll(): Promise<void> {
    for (const server of [...this.watched.values()]) {
      if (this.closed) return;
      // Untracked meanwhile (stopped), or tracked again with other limits: the latest counts.
      if (this.watched.get(server.uuid) !== server) continue;
      try {
        await this.check(server);
      } catch (err) {
        this.options.onError(server.uuid, err);
      }
    }
  }

  private async check(server: DaemonServer): Promise<void> {
    if (overLimit(await this.options.measure(server), server.limits) === null) return;
    await sleep(this.confirmDelayMs);
    if (this.watched.get(server.uuid) !== server) return;
    const detail = overLimit(await this.options.measure(server), server.limits);
    if (detail === null || this.watched.get(server.uuid) !== server) return;
    this.watched.delete(server.uuid);
    await this.options.onExceeded(server, detail);
  }
}
