/**
 * Memory and CPU of running servers, sampled every couple of seconds so that
 * `GET /resources` answers from memory and can give CPU as a rate (Wings'
 * `cpu_absolute`), which one reading cannot. Each tracked server brings its
 * own reader: its process group's figures (group-usage.ts) or its cgroup's
 * (container/cgroup-stats.ts).
 *
 * One timer serves every server, and a round reads them all in one
 * synchronous loop (so the group reader's one pass over /proc serves the
 * round). Its figures live in a mutable record per server: a round allocates
 * only what the readers return.
 */
import { cpuAbsolute } from '../container/cgroup-stats.js';

/** What a reader returns: memory now, and a CPU time counter that only grows while the same processes run. */
export interface UsageReading {
  readonly memoryBytes: number;
  readonly cpuUsageNs: number;
  /** The server's own network's byte counters (docs/reference/network-and-allocations.md); absent = it has none. */
  readonly networkRxBytes?: number;
  readonly networkTxBytes?: number;
}

/** Null when the server's processes are gone (not running, or exited since it was tracked). */
export type UsageReader = () => UsageReading | null;

export interface UsageFigures {
  readonly memoryBytes: number;
  /** Percent of one core (100 = one core busy) between the last two samples; 0 until there are two. */
  readonly cpuAbsolute: number;
  /** The server's own network's counters (docs/reference/network-and-allocations.md); absent where it has none. */
  readonly networkRxBytes?: number;
  readonly networkTxBytes?: number;
}

export interface UsageSamplerOptions {
  /** Between two rounds. */
  intervalMs?: number;
  /** Milliseconds on a monotonic clock. */
  now?: () => number;
  /** Told when a reader throws; the server keeps its last figures. */
  onReadError?: (serverUuid: string, err: unknown) => void;
}

interface TrackedServer {
  readonly uuid: string;
  readonly read: UsageReader;
  /** False before the first reading, and after a reading found the processes gone. */
  sampled: boolean;
  memoryBytes: number;
  cpuAbsolute: number;
  /** Null where the reader gives no network counters. */
  network: { rxBytes: number; txBytes: number } | null;
  /** The reading the CPU rate ends at, and the one before it (when `hasEarlier`). */
  cpuNs: number;
  atMs: number;
  hasEarlier: boolean;
  earlierCpuNs: number;
  earlierAtMs: number;
}

export class UsageSampler {
  private readonly intervalMs: number;
  /**
   * The shortest span a CPU rate is taken over. CPU time moves in clock ticks
   * (10 ms at the usual 100 Hz), so a rate over a few milliseconds (a
   * sampleNow just before a round) would be anything from 0 to several
   * cores; a reading that close to the last one updates memory only.
   */
  private readonly minCpuSpanMs: number;
  private readonly now: () => number;
  private readonly onReadError: ((serverUuid: string, err: unknown) => void) | undefined;
  private readonly servers = new Map<string, TrackedServer>();
  private timer: NodeJS.Timeout | null = null;

  constructor({ intervalMs = 2_000, now = () => performance.now(), onReadError }: UsageSamplerOptions = {}) {
    this.intervalMs = intervalMs;
    this.minCpuSpanMs = intervalMs / 2;
    this.now = now;
    this.onReadError = onReadError;
  }

  /**
   * Samples `read` from now on, at once and then every interval (so the first
   * CPU figure comes one interval after this). Replaces what was tracked for
   * the server: call it again with the new reader when its process restarts.
   */
  track(serverUuid: string, read: UsageReader): void {
    const server: TrackedServer = {
      uuid: serverUuid,
      read,
      sampled: false,
      memoryBytes: 0,
      cpuAbsolute: 0,
      network: null,
      cpuNs: 0,
      atMs: 0,
      hasEarlier: false,
      earlierCpuNs: 0,
      earlierAtMs: 0,
    };
    this.servers.set(serverUuid, server);
    this.sample(server);
    if (this.timer === null) {
      this.timer = setInterval(() => this.sampleAll(), this.intervalMs);
      this.timer.unref();
    }
  }

  isTracked(serverUuid: string): boolean {
    return this.servers.has(serverUuid);
  }

  untrack(serverUuid: string): void {
    this.servers.delete(serverUuid);
    if (this.servers.size === 0) this.stopTimer();
  }

  /** The server's last figures; null when it is not tracked, or its last reading found no process. */
  latest(serverUuid: string): UsageFigures | null {
    const server = this.servers.get(serverUuid);
    if (server === undefined || !server.sampled) return null;
    const figures = { memoryBytes: server.memoryBytes, cpuAbsolute: server.cpuAbsolute };
    return server.network
      ? { ...figures, networkRxBytes: server.network.rxBytes, networkTxBytes: server.network.txBytes }
      : figures;
  }

  /** Reads the server now (for a request that found no figures yet) and returns what latest() then says. */
  sampleNow(serverUuid: string): UsageFigures | null {
    const server = this.servers.get(serverUuid);
    if (server === undefined) return null;
    this.sample(server);
    return this.latest(serverUuid);
  }

  close(): void {
    this.servers.clear();
    this.stopTimer();
  }

  private sampleAll(): void {
    for (const server of this.servers.values()) this.sample(server);
  }

  private sample(server: TrackedServer): void {
    let reading: UsageReading | null;
    try {
      reading = server.read();
    } catch (err) {
      this.onReadError?.(server.uuid, err);
      return;
    }
    const at = this.now();
    if (reading === null) {
      // Gone: a restart under the same reader starts its CPU rate afresh.
      server.sampled = false;
      server.hasEarlier = false;
      server.memoryBytes = 0;
      server.cpuAbsolute = 0;
      server.network = null;
      return;
    }
    server.memoryBytes = reading.memoryBytes;
    server.network =
      reading.networkRxBytes !== undefined && reading.networkTxBytes !== undefined
        ? { rxBytes: reading.networkRxBytes, txBytes: reading.networkTxBytes }
        : null;
    if (server.sampled && at - server.atMs < this.minCpuSpanMs) return;
    if (server.sampled) {
      server.hasEarlier = true;
      server.earlierCpuNs = server.cpuNs;
      server.earlierAtMs = server.atMs;
    }
    server.sampled = true;
    server.cpuNs = reading.cpuUsageNs;
    server.atMs = at;
    server.cpuAbsolute = server.hasEarlier
      ? cpuAbsolute(
          { cpuUsageNs: server.earlierCpuNs, atNs: server.earlierAtMs * 1e6 },
          { cpuUsageNs: server.cpuNs, atNs: at * 1e6 },
        )
      : 0;
  }

  private stopTimer(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}
