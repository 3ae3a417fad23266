/**
 * Unconfined servers (SPEC 7; SPEC 10 with CONTAINMENT off): the startup
 * command runs as `/bin/sh -c` under the service's own user, as the leader of
 * a process group of its own, its console a FIFO (console.ts).
 *
 * A SIGKILL of the service leaves the group running, its pid file naming it;
 * the next service's `reapOrphans` stops it.
 */
import { readGroupUsage } from '../resources/group-usage.js';
import { closeQuietly, closeStdinPipe, openStdinPipe } from './console.js';
import type { LaunchTarget, LaunchedProcess, ProcessExit, ServerLauncher, UsageSample } from './launcher.js';
import type { RecordedGroup } from './process-group.js';
import { spawnServerProcess, whenSpawned } from './spawn-server.js';
import type { ProcessLogger } from './supervisor-options.js';

export class GroupLauncher implements ServerLauncher {
  readonly confined = false;

  constructor(
    private readonly runDir: string,
    private readonly log: ProcessLogger,
  ) {}

  async launch(target: LaunchTarget, startup: string, logFd: number): Promise<LaunchedProcess> {
    const pipe = await openStdinPipe(this.runDir, target.uuid, this.log);
    let child;
    try {
      child = spawnServerProcess(target, startup, pipe?.readFd, logFd);
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
    return { pid: child.pid, stdin, exited, container: null };
  }

  async release(): Promise<{ outOfMemory: boolean }> {
    return { outOfMemory: false };
  }

  usage(_serverUuid: string, record: RecordedGroup): UsageSample | null {
    return readGroupUsage(record.pgid);
  }

  async sweep(): Promise<void> {}
}
