/**
 * Unconfined servers (docs/reference/schedules.md#running-schedules; docs/reference/containment.md with CONTAINMENT off): the startup
 * command runs as `/bin/sh -c` under the service's own user, as the leader of
 * a process group of its own, its console a FIFO (console.ts).
 *
 * Its output goes straight into the console log, through an append-mode
 * descriptor it inherits; the log is rotated by copy and truncate
 * (console-log.ts). Nothing outlives the service on its behalf: a SIGKILL of
 * the service leaves the group running, its pid file naming it, but its
 * console's writer is gone, so the next service's `reapOrphans` stops it
 * (`adopt` says no), and a graceful shutdown stops it whatever
 * SERVERS_ON_SHUTDOWN says.
 */
import { readGroupUsage } from '../resources/group-usage.js';
import { closeQuietly, closeStdinPipe, openStdinPipe } from './console.js';
import { openConsoleLog, rotateConsoleLog, watchConsoleLog } from './console-log.js';
import type { ConsoleLogTarget, LaunchTarget, LaunchedProcess, ProcessExit, ServerLauncher, UsageSample } from './launcher.js';
import type { RecordedGroup } from './process-group.js';
import { spawnServerProcess, whenSpawned } from './spawn-server.js';
import type { ProcessLogger } from './supervisor-options.js';

export class GroupLauncher implements ServerLauncher {
  readonly confined = false;

  constructor(
    private readonly runDir: string,
    private readonly log: ProcessLogger,
  ) {}

  async launch(target: LaunchTarget, startup: string, log: ConsoleLogTarget): Promise<LaunchedProcess> {
    // The log of earlier runs counts toward the limit: it is appended to.
    await rotateConsoleLog(log.path, log.maxBytes).catch((err: unknown) =>
      this.log.warn({ err, serverUuid: target.uuid }, 'could not rotate the console log'),
    );
    const pipe = await openStdinPipe(this.runDir, target.uuid, this.log);
    let child;
    try {
      const logFile = await openConsoleLog(log.path);
      try {
        child = spawnServerProcess(target, startup, pipe?.readFd, logFile.fd);
      } finally {
        // The process writes to its own copy of the descriptor, straight into the file. Not awaited: no
        // 'exit' event may come before the handler below is in place.
        void logFile.close().catch(() => undefined);
      }
    } catch (err) {
      closeStdinPipe(pipe);
      throw err;
    }
    // From here on everything up to the first await is synchronous, so no 'exit' or 'error' event is missed.
    if (pipe) closeQuietly(pipe.readFd); // the child has its own copy
    const exited = new Promise<ProcessExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.on('error', (err) => this.log.error({ err, serverUuid: target.uuid }, 'server process error'));
    const stdin = pipe ? pipe.writer : child.stdin;
    try {
      await whenSpawned(child);
      if (child.pid === undefined) throw new Error('the process has no pid');
    } catch (err) {
      stdin?.destroy();
      throw err;
    }
    const stopWatching = watchConsoleLog(log.path, log.maxBytes, log.checkMs, (err) =>
      this.log.warn({ err, serverUuid: target.uuid }, 'could not rotate the console log'),
    );
    return { pid: child.pid, stdin, exited, container: null, stopWatching };
  }

  adopt(): null {
    return null;
  }

  async release(): Promise<{ outOfMemory: boolean }> {
    return { outOfMemory: false };
  }

  usage(_serverUuid: string, record: RecordedGroup): UsageSample | null {
    return readGroupUsage(record.pgid);
  }

  async sweep(): Promise<void> {}
}
