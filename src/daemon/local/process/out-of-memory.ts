import fs from 'node:fs/promises';
import type { ServerLauncher } from './launcher.js';
import type { RecordedGroup } from './process-group.js';
import type { ProcessLogger } from './supervisor-options.js';

/** The console line a server killed by the kernel's OOM killer leaves in its log (docs/reference/containment.md). */
export const OUT_OF_MEMORY_LINE = 'server killed: out of memory';

/** Releasing an exited process, and who is told that the kernel killed a server for using more memory than its limit, and the console line that says so. */
export class OutOfMemoryReports {
  private readonly listeners = new Set<(serverUuid: string) => void>();

  constructor(private readonly log: ProcessLogger) {}

  subscribe(listener: (serverUuid: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Removes what is left of an exited process (its container) and reports an out-of-memory kill. Never throws. */
  async release(launcher: ServerLauncher, serverUuid: string, record: RecordedGroup, logPath: string): Promise<void> {
    let outOfMemory = false;
    try {
      ({ outOfMemory } = await launcher.release(serverUuid, record));
    } catch (err) {
      this.log.error({ err, serverUuid }, "could not remove the server's container; the next start or service start retries");
    }
    if (outOfMemory) await this.report(serverUuid, logPath);
  }

  /** Never throws: the line is appended to `logPath`, then each listener is told. */
  async report(serverUuid: string, logPath: string): Promise<void> {
    this.log.warn({ serverUuid }, 'server process was killed: out of memory');
    await fs
      .appendFile(logPath, `${OUT_OF_MEMORY_LINE}\n`)
      .catch((err: unknown) => this.log.warn({ err, serverUuid }, 'could not write to the console log'));
    for (const listener of this.listeners) {
      try {
        listener(serverUuid);
      } catch (err) {
        this.log.error({ err, serverUuid }, 'an out-of-memory listener failed');
      }
    }
  }
}
