import fs from 'node:fs/promises';
import path from 'node:path';
import {
  DaemonBusyError,
  DaemonError,
  type BackupArchive,
  type Daemon,
  type DaemonServer,
  type InstallOutcome,
  type InstallScript,
  type PowerSignal,
  type ServerResources,
  type ServerState,
} from '../daemon.js';
import { PRIVATE_DIR_MODE } from '../../private-files.js';
import { createArchive } from './archive/create.js';
import { discardBackupFiles, watchForCrashWhileArchiving } from './archive/backup-files.js';
import { ConsoleBusyError, ProcessSupervisor, ServerNotRunningError, NoStartupCommandError } from './process/supervisor.js';
import { ConsoleTails } from './process/console-tail.js';
import { pidFileServers } from './process/pid-files.js';
import { LocalRestores } from './restore/local-restores.js';
import { ContainerLauncher } from './container/container-launcher.js';
import type { ContainerRuntime } from './container/container-runtime.js';
import { confinedUidOf } from './volume/server-uid.js';
import { silentLogger } from './process/supervisor-options.js';
import { UsageSampler } from './resources/usage-sampler.js';
import { DISK_LIMIT_LINE, DiskWatch } from './resources/disk-watch.js';
import { chownTree, ownedBy } from './volume/volume-owner.js';
import { LocalFiles } from './files/local-files.js';
import { runtimeOptions } from './config-files/runtime-options.js';
import { LocalImages } from './images/local-images.js';
import { bundleRootPaths } from './container/bundle.js';
import { LocalInstaller } from './install/local-installer.js';
import { removeServerFiles, sweepRemovedVolumes } from './volume/remove-server.js';
import { sweepStaleStaging } from './files/decompress.js';
import { DiskUsageCache, diskLimitBytes, inodeLimit, overLimit, type VolumeUsage } from './volume/disk-usage.js';

/** A confined server's volume folder: its own uid's only (docs/reference/containment.md). */
const VOLUME_MODE = 0o700;

export interface LocalDaemonPaths {
  volumes: string;
  backups: string;
  logs: string;
  run: string;
}

export function localDaemonPaths(dataDir: string): LocalDaemonPaths {
  return {
    volumes: path.join(dataDir, 'volumes'),
    backups: path.join(dataDir, 'backups'),
    logs: path.join(dataDir, 'logs'),
    run: path.join(dataDir, 'run'),
  };
}

/** The daemon on this machine: a volume folder and a child process per server, gzip tarballs for backups (docs/reference/schedules.md#running-schedules). */
export class LocalDaemon implements Daemon {
  readonly paths: LocalDaemonPaths;
  private readonly processes: ProcessSupervisor;
  /** Set when server processes run confined (docs/reference/containment.md): their volumes belong to its uid. */
  private readonly containers: ContainerRuntime | null;
  /** Memory and CPU of running servers every 2 s, for `/resources` (a CPU rate needs two samples). */
  private readonly usage: UsageSampler;
  private readonly serversOnShutdown: 'keep' | 'stop';
  /** Volume sizes (docs/reference/containment.md's disk limit): one walk of a volume at a time, however many ask. */
  private readonly diskUsageCache = new DiskUsageCache();
  /** Disk and inode limits held while servers run (docs/reference/containment.md): over one, a server is stopped. */
  private readonly diskWatch: DiskWatch;
  private readonly diskLimitListeners = new Set<(serverUuid: string) => void>();
  /** A server's files (docs/reference/files-and-sftp.md): the routes', SFTP's and installs' one way into a volume. */
  readonly files: LocalFiles;
  /** The node's images (docs/reference/eggs-and-installs.md), under `DATA_DIR/images`. */
  readonly images: LocalImages;
  private readonly installer: LocalInstaller;
  private readonly restores: LocalRestores;
  private readonly logger: NonNullable<ConstructorParameters<typeof ProcessSupervisor>[0]['logger']>;

  constructor(
    dataDir: string,
    opts: {
      stopGraceMs?: number;
      /** CONSOLE_LOG_MB in bytes: where `logs/<uuid>.log` is rotated (default 50 MiB). */
      consoleLogBytes?: number;
      logger?: ConstructorParameters<typeof ProcessSupervisor>[0]['logger'];
      /** From resolveContainment(): run each server in a container (docs/reference/containment.md); null or absent = unconfined. */
      containers?: ContainerRuntime | null;
      /** SERVERS_ON_SHUTDOWN (docs/reference/power-and-console.md#servers-outlive-the-service): `keep` leaves confined servers running at close; `stop` (the default here) stops them. */
      serversOnShutdown?: 'keep' | 'stop';
      /** How often running servers' volumes are measured against their limits (default 10 s). */
      diskWatchIntervalMs?: number;
      /** How long a replaced image version is kept at least (default 60 s; images/local-images.ts). */
      imageSweepGraceMs?: number;
    } = {},
  ) {
    this.paths = localDaemonPaths(dataDir);
    this.containers = opts.containers ?? null;
    this.serversOnShutdown = opts.serversOnShutdown ?? 'stop';
    const logger = opts.logger ?? silentLogger;
    this.logger = logger;
    this.images = new LocalImages(path.join(dataDir, 'images'), {
      inUseRoots: () => bundleRootPaths(this.paths.run),
      ...(opts.imageSweepGraceMs !== undefined ? { sweepGraceMs: opts.imageSweepGraceMs } : {}),
    });
    this.processes = new ProcessSupervisor({
      logDir: this.paths.logs,
      runDir: this.paths.run,
      ...(this.containers ? { launcher: new ContainerLauncher(this.containers, this.paths.run, logger, this.images) } : {}),
      watchConsole: (serverUuid, onLine) => this.consoleTails().watch(serverUuid, onLine),
      ...(opts.stopGraceMs !== undefined ? { stopGraceMs: opts.stopGraceMs } : {}),
      ...(opts.consoleLogBytes !== undefined ? { consoleLogBytes: opts.consoleLogBytes } : {}),
      ...(opts.logger ? { logger: opts.logger } : {}),
    });
    this.files = new LocalFiles({
      volumeDir: (uuid) => this.volumeDir(uuid),
      backupPath: (uuid) => this.backupPath(uuid),
      ownerOf: (server) => this.volumeOwner(server),
      volumeUsage: (server) => this.volumeUsage(server, 0),
    });
    this.installer = new LocalInstaller({
      logsDir: this.paths.logs,
      runDir: this.paths.run,
      containers: this.containers,
      volumeDir: (uuid) => this.volumeDir(uuid),
      prepareVolume: (server) => this.prepareVolume(server),
      uidOf: (server) => this.serverUid(server),
      rootfsOf: (image) => this.images.rootfsOf(image),
      serverRunning: (uuid) => this.processes.state(uuid) !== 'offline',
      volumeChanged: (server) => this.volumeChanged(server),
    });
    this.restores = new LocalRestores({
      volumesDir: this.paths.volumes,
      volumeDir: (uuid) => this.volumeDir(uuid),
      backupPath: (uuid) => this.backupPath(uuid),
      prepareVolume: (server) => this.prepareVolume(server),
      stopIfRunning: (server) => this.haltIfRunning(server, 'stop'),
      killIfRunning: (server) => this.haltIfRunning(server, 'kill'),
      volumeUsage: (server) => this.volumeUsage(server, 0),
      volumeOwner: (server) => this.volumeOwner(server),
      volumeChanged: (server) => this.volumeChanged(server),
    });
    this.usage = new UsageSampler({
      onReadError: (serverUuid, err) => logger.warn({ err, serverUuid }, "could not read a server's usage"),
    });
    this.diskWatch = new DiskWatch({
      ...(opts.diskWatchIntervalMs !== undefined ? { intervalMs: opts.diskWatchIntervalMs } : {}),
      measure: (server) => this.volumeUsage(server, 0),
      onExceeded: (server, detail) => this.stopOverDiskLimit(server, detail),
      onError: (serverUuid, err) => logger.warn({ err, serverUuid }, "could not measure a running server's volume"),
    });
    // Our own servers are sampled from their start; another instance's from the first request for them.
    this.processes.onStateChange((serverUuid, state) => {
      if (state === 'running') this.trackUsage(serverUuid);
      else if (state === 'offline') {
        this.usage.untrack(serverUuid);
        this.diskWatch.untrack(serverUuid);
      }
    });
  }

  /** The volume changed under the daemon (a restore, an install): kept measurements of it are stale. */
  private volumeChanged(server: DaemonServer): void {
    this.diskUsageCache.forget(server.uuid);
    this.files.budget.forget(server);
  }

  private async haltIfRunning(server: DaemonServer, how: 'stop' | 'kill'): Promise<void> {
    if (this.processes.state(server.uuid) !== 'offline') await this.processes[how](this.supervised(server));
  }

  private trackUsage(serverUuid: string): void {
    this.usage.track(serverUuid, () => this.processes.usage(serverUuid));
  }

  /** Call once at start: adopts the servers an instance that is gone left running (docs/reference/power-and-console.md#servers-outlive-the-service), stops what it cannot adopt. */
  async start(): Promise<void> {
    // Inside DATA_DIR (0700), and as private themselves (docs/reference/containment.md).
    await Promise.all(Object.values(this.paths).map((dir) => fs.mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE })));
    // A live instance's install (a `server:reinstall` beside us) keeps the server's network.
    await this.processes.reapOrphans((uuid) => this.installer.runsElsewhereSync(uuid));
    await sweepStaleStaging(this.paths.volumes); // decompresses a crash cut short (files/decompress.ts)
    // Image versions no box uses, builds and imports a killed process left (images/image-store.ts).
    await this.images.sweep().catch((err: unknown) => this.logger.warn({ err }, 'could not sweep the images folder'));
    await sweepRemovedVolumes(this.paths.volumes); // server:delete's removals a crash cut short
  }

  volumeDir(serverUuid: string): string {
    return path.join(this.paths.volumes, serverUuid);
  }

  backupPath(backupUuid: string): string {
    return path.join(this.paths.backups, `${backupUuid}.tar.gz`);
  }

  private supervised(server: DaemonServer) {
    const uid = this.serverUid(server);
    return {
      uuid: server.uuid,
      startup: server.startup,
      stopCommand: server.stopCommand,
      volumeDir: this.volumeDir(server.uuid),
      ...(server.limits ? { limits: server.limits } : {}),
      ...(server.allocations ? { allocations: server.allocations } : {}),
      ...(uid !== undefined ? { uid } : {}),
      ...(server.image !== undefined ? { image: server.image } : {}),
      ...runtimeOptions(server, this.files, path.join(this.paths.logs, `${server.uuid}.log`), this.logger, !!this.containers),
    };
  }

  /** The uid a confined server runs as (volume/server-uid.ts); undefined unconfined. */
  private serverUid(server: DaemonServer): number | undefined {
    return confinedUidOf(this.containers, server, this.volumeDir(server.uuid));
  }

  async prepareVolume(server: DaemonServer): Promise<void> {
    // volumes/ may not exist yet (a first start creates its server before start()): private like its siblings.
    await fs.mkdir(this.paths.volumes, { recursive: true, mode: PRIVATE_DIR_MODE });
    const volume = this.volumeDir(server.uuid);
    await fs.mkdir(volume, { recursive: true });
    // A confined server must own its files: a volume from before containment, or of the shared
    // SERVER_UID before per-server uids, is given to its uid whole (the root last: see chownTree).
    const uid = this.serverUid(server);
    if (uid === undefined) return;
    if (!ownedBy(volume, uid)) await chownTree(volume, uid, uid);
    // Its owner's alone: another server's uid that found a way to the path (/proc/<pid>/root) cannot enter it.
    await fs.chmod(volume, VOLUME_MODE);
  }

  /** Who restored files belong to: the confined server's uid, or the service's user. */
  private volumeOwner(server: DaemonServer): { uid: number; gid: number } | undefined {
    const uid = this.serverUid(server);
    return uid === undefined ? undefined : { uid, gid: uid };
  }

  /** Told when the kernel killed a server for using more memory than its limit (docs/reference/containment.md). */
  onOutOfMemory(listener: (serverUuid: string) => void): () => void {
    return this.processes.onOutOfMemory(listener);
  }

  /** Console output as the server prints it (docs/reference/power-and-console.md#websocket): one reader of its console log per server, however many watch. */
  watchConsole(server: DaemonServer, onLine: (line: string) => void): () => void {
    return this.consoleTails().watch(server.uuid, onLine);
  }

  async consoleHistory(server: DaemonServer, lines: number): Promise<string[]> {
    return this.consoleTails().history(server.uuid, lines);
  }

  /** Made on first use; it stops watching by itself once nobody watches. */
  private consoleTailsCreated: ConsoleTails | undefined;
  private consoleTails(): ConsoleTails {
    this.consoleTailsCreated ??= new ConsoleTails(this.paths.logs);
    return this.consoleTailsCreated;
  }

  async state(server: DaemonServer): Promise<ServerState> {
    return this.processes.state(server.uuid);
  }

  async power(server: DaemonServer, signal: PowerSignal): Promise<void> {
    // Before anything stops or starts: a restart refused here leaves the running process alone.
    if (signal === 'start' || signal === 'restart') await this.assertStartable(server);
    // Not beside its own install (a schedule's power task that raced the claim).
    if (signal === 'start' && (await this.installer.isRunning(server)))
      throw new DaemonBusyError('This server is being installed.');
    const target = this.supervised(server);
    try {
      switch (signal) {
        case 'start':
          await this.prepareVolume(server);
          await this.processes.start(target);
          return this.watchDisk(server);
        case 'stop':
          return await this.processes.stop(target);
        case 'restart':
          await this.prepareVolume(server);
          await this.processes.restart(target);
          return this.watchDisk(server);
        case 'kill':
          return await this.processes.kill(target);
      }
    } catch (err) {
      if (err instanceof NoStartupCommandError) throw new DaemonError('This server has no startup command.');
      throw err;
    }
  }

  /** Watches a server that runs here against its disk and inode limits (a no-op when it has none or has stopped). */
  private watchDisk(server: DaemonServer): void {
    if (this.processes.state(server.uuid) !== 'offline') this.diskWatch.track(server);
  }

  /**
   * A running server passed its disk or inode limit (docs/reference/containment.md): the console
   * line first (the console's readers see why), the listeners (the activity
   * log), then a stop as the user's (stop command, then signals after the
   * grace period).
   */
  private async stopOverDiskLimit(server: DaemonServer, detail: string): Promise<void> {
    if (this.processes.state(server.uuid) === 'offline') return;
    this.logger.warn({ serverUuid: server.uuid, detail }, 'server passed its disk limit; stopping it');
    await fs
      .appendFile(path.join(this.paths.logs, `${server.uuid}.log`), `${DISK_LIMIT_LINE}\n`)
      .catch((err: unknown) => this.logger.warn({ err, serverUuid: server.uuid }, 'could not write to the console log'));
    for (const listener of this.diskLimitListeners) {
      try {
        listener(server.uuid);
      } catch (err) {
        this.logger.error({ err, serverUuid: server.uuid }, 'a disk-limit listener failed');
      }
    }
    await this.processes
      .stop(this.supervised(server))
      .catch((err: unknown) =>
        this.logger.error({ err, serverUuid: server.uuid }, 'could not stop a server over its disk limit'),
      );
  }

  /** Told when a running server was stopped for passing its disk or inode limit (docs/reference/containment.md). */
  onDiskLimit(listener: (serverUuid: string) => void): () => void {
    this.diskLimitListeners.add(listener);
    return () => this.diskLimitListeners.delete(listener);
  }

  get containment(): 'on' | 'off' {
    return this.processes.confined ? 'on' : 'off';
  }

  /**
   * docs/reference/containment.md's figures: memory and CPU from the sampler (a confined server's
   * cgroup, or a plain process group's /proc entries), disk measured on the
   * volume (at most 10 s old), uptime since the process started; network
   * from a confined server's own veth (docs/reference/network-and-allocations.md), 0 on the host's network,
   * where a process has no counters of its own.
   */
  async resources(server: DaemonServer): Promise<ServerResources> {
    const diskBytes = await this.cachedDiskUsage(server, 10_000);
    const state = this.processes.state(server.uuid);
    const startedAt = state === 'offline' ? null : this.processes.startedAt(server.uuid);
    if (startedAt === null) {
      this.usage.untrack(server.uuid);
      return { state, memoryBytes: 0, cpuAbsolute: 0, diskBytes, networkRxBytes: 0, networkTxBytes: 0, uptimeMs: 0 };
    }
    if (!this.usage.isTracked(server.uuid)) this.trackUsage(server.uuid);
    // A running server this daemon is not watching yet (one started before the service restarted).
    if (state === 'running' && !this.diskWatch.isWatched(server.uuid)) this.diskWatch.track(server);
    const figures = this.usage.latest(server.uuid);
    return {
      state,
      memoryBytes: figures?.memoryBytes ?? 0,
      cpuAbsolute: figures?.cpuAbsolute ?? 0,
      diskBytes,
      networkRxBytes: figures?.networkRxBytes ?? 0,
      networkTxBytes: figures?.networkTxBytes ?? 0,
      uptimeMs: Math.max(0, Date.now() - startedAt),
    };
  }

  async diskUsage(server: DaemonServer): Promise<number> {
    // Fresh: a figure a limit is checked against must not predate the caller's request (a walk in flight is shared).
    return (await this.volumeUsage(server, 0)).bytes;
  }

  /** The volume's size, reusing a measurement up to `maxAgeMs` old (`/resources`, asked every few seconds). */
  async cachedDiskUsage(server: DaemonServer, maxAgeMs: number): Promise<number> {
    return (await this.volumeUsage(server, maxAgeMs)).bytes;
  }

  /** Allocated bytes and inodes of the volume, reusing a measurement up to `maxAgeMs` old. */
  private async volumeUsage(server: DaemonServer, maxAgeMs: number): Promise<VolumeUsage> {
    return this.diskUsageCache.get(server.uuid, this.volumeDir(server.uuid), maxAgeMs);
  }

  async assertStartable(server: DaemonServer): Promise<void> {
    await this.images.assertRunnable(server.image, this.containers !== null);
    await this.refuseOverDiskLimit(server, 'starting it');
  }

  /** DaemonBusyError (409) when the server's volume is over its disk or inode limit (docs/reference/containment.md). */
  private async refuseOverDiskLimit(server: DaemonServer, before: string): Promise<void> {
    if (diskLimitBytes(server.limits) === null && inodeLimit(server.limits) === null) return;
    let usage: VolumeUsage;
    try {
      usage = await this.volumeUsage(server, 0);
    } catch (err) {
      // A volume that cannot be walked (a tree deeper than the walk holds descriptors for) is the daemon's failure: 502.
      throw new DaemonError(`Could not measure the server's disk usage: ${err instanceof Error ? err.message : String(err)}`);
    }
    const over = overLimit(usage, server.limits);
    if (over === null) return;
    throw new DaemonBusyError(
      `This server is using more disk space than its limit allows (${over}); delete files before ${before}.`,
    );
  }

  async sendCommand(server: DaemonServer, line: string): Promise<void> {
    try {
      await this.processes.sendCommand(server.uuid, line);
    } catch (err) {
      if (err instanceof ServerNotRunningError) throw new DaemonError('The server is not running.');
      if (err instanceof ConsoleBusyError)
        throw new DaemonBusyError('The server is not reading its console; too much input is already waiting.');
      throw err;
    }
  }

  async createBackup(server: DaemonServer, backup: { uuid: string; ignored: string[] }): Promise<BackupArchive> {
    // The backups service refuses first; this holds for any other caller. Before any archive file exists.
    await this.refuseOverDiskLimit(server, 'creating a backup');
    await this.prepareVolume(server);
    const stopWatching = watchForCrashWhileArchiving(this.paths.backups, this.backupPath(backup.uuid));
    try {
      return await createArchive({
        volumeDir: this.volumeDir(server.uuid),
        archivePath: this.backupPath(backup.uuid),
        ignore: backup.ignored,
      });
    } finally {
      stopWatching();
    }
  }

  restoreBackup(
    server: DaemonServer,
    backup: { uuid: string; sha1: string | null },
    options: { truncate: boolean; restoreId?: string; maxEntries?: number },
  ): Promise<void> {
    return this.restores.restore(server, backup, options);
  }

  recoverRestore(server: DaemonServer, restoreId: string): Promise<'restored' | 'rolled-back' | 'not-here'> {
    return this.restores.recover(server, restoreId);
  }

  discardRestore(restoreId: string): Promise<void> {
    return this.restores.discard(restoreId);
  }

  listRestores(): Promise<string[]> {
    return this.restores.list();
  }

  async deleteBackup(_server: DaemonServer, backupUuid: string): Promise<void> {
    await fs.rm(this.backupPath(backupUuid), { force: true });
  }

  async discardBackup(_server: DaemonServer, backupUuid: string): Promise<void> {
    await discardBackupFiles(this.paths.backups, this.backupPath(backupUuid));
  }

  async deleteFiles(server: DaemonServer, paths: string[]): Promise<void> {
    await this.files.delete(server, paths);
  }

  install(server: DaemonServer, script: InstallScript, onLine: (line: string) => void): Promise<InstallOutcome> {
    return this.installer.install(server, script, onLine);
  }

  installLog(server: DaemonServer, lines: number): Promise<string[]> {
    return this.installer.log(server, lines);
  }

  abortInstall(server: DaemonServer, reason?: string): Promise<void> {
    return this.installer.abort(server, reason);
  }

  installRunning(server: DaemonServer): Promise<boolean> {
    return this.installer.isRunning(server);
  }

  async removeServer(server: DaemonServer): Promise<void> {
    if ((await this.state(server)) !== 'offline') throw new DaemonError('The server is running: stop it before removing it.');
    await removeServerFiles(this.paths, server.uuid);
  }

  /** Servers whose pid file names a live process: this instance's, another's, or one a gone instance left (docs/reference/power-and-console.md#servers-outlive-the-service). */
  runningServers(): string[] {
    return pidFileServers(this.paths.run).filter((uuid) => this.processes.state(uuid) !== 'offline');
  }

  onStateChange(listener: (serverUuid: string, state: ServerState) => void): () => void {
    return this.processes.onStateChange(listener);
  }

  /** Stops watching; stops the servers, or (SERVERS_ON_SHUTDOWN=keep) leaves confined ones running for the next start to adopt. */
  async close(): Promise<void> {
    this.usage.close();
    await this.diskWatch.close();
    await this.processes.shutdownAll({ keep: this.serversOnShutdown === 'keep' });
  }
}
