/**
 * Confined servers (SPEC 10): each server's startup command runs in a runc
 * container of its own (server-container.ts), under its own uid (SERVER_UID_RANGE), with its
 * volume as /home/container and its limits in its cgroup. What the service
 * keeps of a running container, and what a SIGKILL of the service leaves, is
 * in docs/CONTAINMENT.md; in short: the container runs on without the
 * service, the pid file names its first process and the container, and the
 * next service stops it (`reapOrphans`) and removes it (`release`), or removes
 * it at once when no pid file names it (`sweep`).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ServerLimits } from '../../daemon.js';
import type { LaunchTarget, LaunchedProcess, ServerLauncher, UsageSample } from '../process/launcher.js';
import type { ProcessLogger } from '../process/supervisor-options.js';
import { bundlePaths, removeBundle } from './bundle.js';
import { readCgroupStats } from './cgroup-stats.js';
import type { ContainerRuntime } from './container-runtime.js';
import { containerId, defaultCgroupsPath, type ContainerLimits } from './container-spec.js';
import { removeServerContainer, startServerContainer } from './server-container.js';

/** SPEC 10: a fork bomb stops here unless the server says otherwise. */
export const DEFAULT_PIDS_LIMIT = 512;
const CONTAINER_PREFIX = 'quetzal-';

export class ContainerLauncher implements ServerLauncher {
  readonly confined = true;

  constructor(
    private readonly runtime: ContainerRuntime,
    private readonly runDir: string,
    private readonly log: ProcessLogger,
  ) {}

  async launch(target: LaunchTarget, startup: string, logFd: number): Promise<LaunchedProcess> {
    const { runc } = this.runtime;
    // Under our claim nobody else runs this server: a container still listed is a dead run's (ended, not yet removed).
    if ((await runc.state(containerId(target.uuid))) !== null) {
      this.log.warn({ serverUuid: target.uuid }, "removing the server's previous container before starting it again");
      await removeServerContainer(runc, this.runDir, target.uuid);
    }
    const started = await startServerContainer(
      runc,
      this.runDir,
      {
        serverUuid: target.uuid,
        startup,
        // A real path: runc binds what it is given, and a link in it must not lead elsewhere.
        volumeDir: await fs.realpath(target.volumeDir),
        uid: target.uid ?? this.runtime.uid,
        gid: target.uid ?? this.runtime.uid,
        limits: containerLimits(target.limits),
        cgroupsPath: defaultCgroupsPath(target.uuid),
        hiddenPaths: this.runtime.hiddenPaths,
        host: this.runtime.host,
        serviceEnv: process.env,
      },
      logFd,
    );
    return {
      pid: started.pid,
      stdin: started.stdin,
      exited: started.exited.then(({ code, signal }) => ({ code, signal })),
      container: started.id,
    };
  }

  async release(serverUuid: string): Promise<{ outOfMemory: boolean }> {
    // Before `runc delete`, which removes the cgroup and its count with it.
    let outOfMemory = false;
    try {
      outOfMemory = (readCgroupStats(this.runtime.hierarchy, defaultCgroupsPath(serverUuid))?.oomKills ?? 0) > 0;
    } catch (err) {
      this.log.warn({ err, serverUuid }, "could not read the container's out-of-memory count");
    }
    await removeServerContainer(this.runtime.runc, this.runDir, serverUuid);
    return { outOfMemory };
  }

  usage(serverUuid: string): UsageSample | null {
    const stats = readCgroupStats(this.runtime.hierarchy, defaultCgroupsPath(serverUuid));
    return stats && { memoryBytes: stats.memoryBytes, cpuUsageNs: stats.cpuUsageNs };
  }

  async sweep(owned: (serverUuid: string) => boolean): Promise<void> {
    const containers = await this.runtime.runc.list();
    const listed = new Set<string>();
    for (const container of containers) {
      if (!container.id.startsWith(CONTAINER_PREFIX)) continue;
      const serverUuid = container.id.slice(CONTAINER_PREFIX.length);
      listed.add(serverUuid);
      if (owned(serverUuid)) continue;
      this.log.warn({ serverUuid, status: container.status }, 'removing a container no pid file accounts for');
      await removeServerContainer(this.runtime.runc, this.runDir, serverUuid).catch((err: unknown) =>
        this.log.error({ err, serverUuid }, 'could not remove a left-over container'),
      );
    }
    const bundles = await fs.readdir(path.join(this.runDir, 'containers')).catch(() => [] as string[]);
    for (const serverUuid of bundles) {
      if (listed.has(serverUuid) || owned(serverUuid)) continue;
      await removeBundle(bundlePaths(this.runDir, serverUuid));
    }
  }
}

export function containerLimits(limits: ServerLimits | undefined): ContainerLimits {
  return {
    memoryMiB: limits?.memoryMiB ?? 0,
    cpuPercent: limits?.cpuPercent ?? 0,
    pids: limits?.pids ?? DEFAULT_PIDS_LIMIT,
  };
}
