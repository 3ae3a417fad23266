/**
 * Confined servers (docs/reference/containment.md): each server's startup command runs in a runc
 * container of its own (server-container.ts), under its own uid (SERVER_UID_RANGE), with its
 * volume as /home/container and its limits in its cgroup. What the service
 * keeps of a running container, and what a SIGKILL of the service leaves, is
 * in docs/CONTAINMENT.md; in short: the container and its monitor (conmon,
 * which holds its stdio and writes its log) run on without the service, the
 * pid file names its first process and the container, and the next service
 * adopts it (`adopt`), or removes it when no pid file names it (`sweep`).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { DaemonError, type ServerLimits } from '../../daemon.js';
import { setAsideConsoleLog } from '../process/console-log.js';
import type { ConsoleLogTarget, LaunchTarget, LaunchedProcess, ServerLauncher, UsageSample } from '../process/launcher.js';
import { leaderStatus, type RecordedGroup } from '../process/process-group.js';
import type { ProcessLogger } from '../process/supervisor-options.js';
import { bundlePaths, removeBundle } from './bundle.js';
import { readCgroupStats } from './cgroup-stats.js';
import { liveConmonPid } from './conmon.js';
import type { ContainerRuntime } from './container-runtime.js';
import { containerId, defaultCgroupsPath, type ContainerLimits } from './container-spec.js';
import { openContainerStdin, removeServerContainer, startServerContainer, watchAdoptedContainer } from './server-container.js';
import { HOST_IMAGE } from '../images/local-images.js';
import { serverExtraEnv } from '../process/server-env.js';

/** docs/reference/containment.md: a fork bomb stops here unless the server says otherwise. */
export const DEFAULT_PIDS_LIMIT = 512;
const CONTAINER_PREFIX = 'quetzal-';

/** What the launcher needs of the node's images (images/local-images.ts `LocalImages`). */
export interface ImageRoots {
  /** The image's current root file system, null for `host`; DaemonError when no image has that name. */
  rootfsOf(name: string | null | undefined): Promise<string | null>;
  /** Removes image versions no box uses any more (after a release). */
  sweep(): Promise<void>;
}

export class ContainerLauncher implements ServerLauncher {
  readonly confined = true;

  constructor(
    private readonly runtime: ContainerRuntime,
    private readonly runDir: string,
    private readonly log: ProcessLogger,
    private readonly images: ImageRoots | null = null,
  ) {}

  async launch(target: LaunchTarget, startup: string, log: ConsoleLogTarget): Promise<LaunchedProcess> {
    const { runc } = this.runtime;
    // Under our claim nobody else runs this server: a container still listed is a dead run's (ended, not yet removed).
    if ((await runc.state(containerId(target.uuid))) !== null) {
      this.log.warn({ serverUuid: target.uuid }, "removing the server's previous container before starting it again");
      await removeServerContainer(runc, this.runDir, target.uuid);
    }
    // Resolved before anything is made: a missing image refuses the start with nothing to undo.
    const imageRootfs = (await this.images?.rootfsOf(target.image)) ?? null;
    if (imageRootfs === null && target.image != null && target.image !== HOST_IMAGE)
      throw new DaemonError(`no image named ${target.image} on this node`);
    await setAsideConsoleLog(log.path);
    // Its own network first (docs/reference/network-and-allocations.md): the container enters the namespace at its start.
    const { network } = this.runtime;
    const attached = await network.attach(target.uuid, target.allocations ?? []);
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
        extraEnv: serverExtraEnv(target.allocations, target.environment),
        networkNamespace: attached.namespacePath,
        resolvConf: network.resolvConf,
        ...(imageRootfs !== null ? { imageRootfs } : {}),
      },
      { conmon: this.runtime.conmon, logPath: log.path, logSizeMax: log.maxBytes },
    ).catch(async (err: unknown) => {
      await network.detach(target.uuid).catch(() => undefined);
      throw err;
    });
    return {
      pid: started.pid,
      stdin: started.stdin,
      exited: started.exit.exited,
      container: started.id,
      stopWatching: () => started.exit.detach(),
    };
  }

  adopt(serverUuid: string, record: RecordedGroup): LaunchedProcess | null {
    const id = containerId(serverUuid);
    if (record.container !== id || leaderStatus(record) !== 'alive') return null;
    // Without its monitor nobody holds its output or will record its end: it cannot be taken over.
    if (liveConmonPid(bundlePaths(this.runDir, serverUuid).conmonPidFile) === null) return null;
    const exit = watchAdoptedContainer(this.runDir, serverUuid);
    let stdin: LaunchedProcess['stdin'] = null;
    try {
      stdin = openContainerStdin(record.pid);
    } catch (err) {
      // Ended meanwhile: the exit watch says so at once.
      this.log.warn({ err, serverUuid }, "could not open an adopted server's console");
    }
    return { pid: record.pid, stdin, exited: exit.exited, container: id, stopWatching: () => exit.detach() };
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
    // After the container: nothing is left to use the namespace.
    await this.runtime.network
      .detach(serverUuid)
      .catch((err: unknown) =>
        this.log.error({ err, serverUuid }, "could not remove the server's network; the next start's sweep will"),
      );
    // The bundle is gone: an image version it named may be unused now. Not awaited: the stop does not wait for it.
    this.images?.sweep().catch((err: unknown) => this.log.warn({ err, serverUuid }, 'could not remove unused image versions'));
    return { outOfMemory };
  }

  usage(serverUuid: string): UsageSample | null {
    const stats = readCgroupStats(this.runtime.hierarchy, defaultCgroupsPath(serverUuid));
    if (stats === null) return null;
    const traffic = this.runtime.network.counters(serverUuid);
    return {
      memoryBytes: stats.memoryBytes,
      cpuUsageNs: stats.cpuUsageNs,
      ...(traffic ? { networkRxBytes: traffic.rxBytes, networkTxBytes: traffic.txBytes } : {}),
    };
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
    await this.runtime.network.sweep(owned);
  }
}

export function containerLimits(limits: ServerLimits | undefined): ContainerLimits {
  return {
    memoryMiB: limits?.memoryMiB ?? 0,
    cpuPercent: limits?.cpuPercent ?? 0,
    pids: limits?.pids ?? DEFAULT_PIDS_LIMIT,
  };
}
