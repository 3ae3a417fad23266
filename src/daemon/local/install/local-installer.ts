/**
 * Install scripts (docs/reference/eggs-and-installs.md): each in an installer box of its own
 * (install-box.ts) when servers run confined, as a plain child process
 * otherwise (install-process.ts); the output goes to the caller line by line
 * and to `<logs>/<uuid>.install.log` (install-log.ts), ended by a `[Quetzal]`
 * line saying how the install ended.
 *
 * One install per server on the node: this instance's own are in memory,
 * another instance's (a `server:reinstall` command beside the service) show
 * through the install record (install-record.ts), whose owner still lives.
 * What a SIGKILL of the service leaves: the record naming a dead owner, and
 * the box (or child) running on until its next write fails, or its end; the
 * next start's recovery calls `abort`, which ends it and removes the rest.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { DaemonBusyError, DaemonError, type DaemonServer, type InstallOutcome, type InstallScript } from '../../daemon.js';
import type { ContainerRuntime } from '../container/container-runtime.js';
import { removeInstallBox, runInstallBox } from './install-box.js';
import { installLogPath, InstallLogWriter, LOG_PREFIX, readInstallLogTail } from './install-log.js';

import { killInstallProcess, startInstallProcess } from './install-process.js';
import {
  installRecordPath,
  ownedElsewhere,
  readInstallRecord,
  readInstallRecordSync,
  removeInstallRecord,
  writeInstallRecord,
} from './install-record.js';

export interface LocalInstallerOptions {
  readonly logsDir: string;
  readonly runDir: string;
  /** null = unconfined. */
  readonly containers: ContainerRuntime | null;
  readonly volumeDir: (serverUuid: string) => string;
  /** Makes the volume (and gives it to the server's uid when confined). */
  readonly prepareVolume: (server: DaemonServer) => Promise<void>;
  /** The server's uid when confined. */
  readonly uidOf: (server: DaemonServer) => number | undefined;
  /** The image's root filesystem; null = `host`. Throws for an image that does not exist. */
  readonly rootfsOf: (image: string) => Promise<string | null>;
  /** Whether the server's own process runs (an install must not run beside it). */
  readonly serverRunning: (serverUuid: string) => boolean;
  /** The volume changed: figures kept of it are stale. */
  readonly volumeChanged?: (server: DaemonServer) => void;
  readonly logBytes?: number;
}

export class LocalInstaller {
  /** This instance's installs in progress, by server. */
  private readonly running = new Map<string, Promise<InstallOutcome>>();
  /** This instance's unconfined install processes, known before their record is written (abort may come first). */
  private readonly processes = new Map<string, { pid: number; startTime: string | null }>();

  constructor(private readonly options: LocalInstallerOptions) {}

  install(server: DaemonServer, script: InstallScript, onLine: (line: string) => void): Promise<InstallOutcome> {
    if (this.running.has(server.uuid))
      return Promise.reject(new DaemonBusyError('An install of this server is already running.'));
    const run = this.run(server, script, onLine).finally(() => this.running.delete(server.uuid));
    this.running.set(server.uuid, run);
    return run;
  }

  private async run(server: DaemonServer, script: InstallScript, onLine: (line: string) => void): Promise<InstallOutcome> {
    const { options } = this;
    const recordFile = installRecordPath(options.runDir, server.uuid);
    if (ownedElsewhere(await readInstallRecord(recordFile)))
      throw new DaemonBusyError('An install of this server is already running in another instance of the service.');
    if (options.serverRunning(server.uuid)) throw new DaemonBusyError('The server must be stopped before it is installed.');
    // What a dead instance left of an earlier install goes first.
    await this.clearLeftovers(server);
    const log = await InstallLogWriter.create(installLogPath(options.logsDir, server.uuid), options.logBytes);
    // From here on a SIGKILL leaves a record naming a dead owner: the next start knows an install was cut short.
    await writeInstallRecord(recordFile, {});
    const line = (text: string) => {
      log.append(text);
      onLine(text);
    };
    let outcome: InstallOutcome;
    try {
      outcome = await this.runScript(server, script, recordFile, line);
    } catch (err) {
      outcome = { exitCode: -1, error: err instanceof Error ? err.message : String(err) };
    } finally {
      options.volumeChanged?.(server);
    }
    const ending = outcome.error ?? `the install script exited with code ${outcome.exitCode}`;
    log.appendOwn(outcome.error === undefined ? ending : `the install failed: ${ending}`);
    await log.close();
    await removeInstallRecord(recordFile);
    return outcome;
  }

  private async runScript(
    server: DaemonServer,
    script: InstallScript,
    recordFile: string,
    onLine: (line: string) => void,
  ): Promise<InstallOutcome> {
    const { options } = this;
    await options.prepareVolume(server);
    const volumeDir = await fs.realpath(options.volumeDir(server.uuid));
    const containers = options.containers;
    if (containers === null) {
      const started = await startInstallProcess(volumeDir, this.scriptFile(server.uuid), script, onLine);
      this.processes.set(server.uuid, { pid: started.pid, startTime: started.startTime });
      try {
        await writeInstallRecord(recordFile, { process: { pid: started.pid, startTime: started.startTime } });
        return await started.outcome;
      } finally {
        this.processes.delete(server.uuid);
        await fs.rm(this.scriptFile(server.uuid), { force: true });
      }
    }
    const rootfs = await options.rootfsOf(script.image).catch((err: unknown) => {
      throw new DaemonError(
        `the install image ${script.image} cannot be used: ${err instanceof Error ? err.message : String(err)}`,
      );
    });
    const uid = options.uidOf(server);
    if (uid === undefined) throw new DaemonError('a confined install needs the server uid');
    await writeInstallRecord(recordFile, { box: `qzinstall-${server.uuid}` });
    return runInstallBox(
      containers,
      options.runDir,
      { serverUuid: server.uuid, volumeDir, uid, limits: server.limits, rootfs },
      script,
      onLine,
    );
  }

  private scriptFile(serverUuid: string): string {
    return path.join(this.options.runDir, 'installs', `${serverUuid}.install.sh`);
  }

  async log(server: DaemonServer, lines: number): Promise<string[]> {
    return readInstallLogTail(installLogPath(this.options.logsDir, server.uuid), lines);
  }

  /** Whether an install of the server runs on this node: this instance's, or a live other instance's. */
  async isRunning(server: DaemonServer): Promise<boolean> {
    if (this.running.has(server.uuid)) return true;
    return ownedElsewhere(await readInstallRecord(installRecordPath(this.options.runDir, server.uuid)));
  }

  /** Whether a live other instance runs an install of the server (the start-up sweep leaves its network alone). */
  runsElsewhereSync(serverUuid: string): boolean {
    return ownedElsewhere(readInstallRecordSync(installRecordPath(this.options.runDir, serverUuid)));
  }

  /**
   * Ends the server's install on this node: this instance's own (its box or
   * child killed; resolves once it has ended, as failed), or what a dead
   * instance left (its box or child process), and removes its record. An
   * install a live other instance runs is left alone: DaemonBusyError.
   * With `reason`, the install log ends with `[Quetzal] the install failed:
   * <reason>`: after the output of the install cut short when its record was
   * there, alone when the install never reached the node (a SIGKILL between
   * the panel's claim and the daemon's start: the log was an older install's).
   */
  async abort(server: DaemonServer, reason?: string): Promise<void> {
    const own = this.running.get(server.uuid);
    const hadRecord = await this.clearLeftovers(server);
    if (own) await own.catch(() => undefined);
    else if (reason !== undefined) {
      const line = `${LOG_PREFIX} the install failed: ${reason}\n`;
      const log = installLogPath(this.options.logsDir, server.uuid);
      await (hadRecord ? fs.appendFile(log, line) : fs.writeFile(log, line, { mode: 0o600 })).catch(() => undefined);
    }
  }

  /** Ends and removes what a dead instance left; whether it had left a record (an install had begun). */
  private async clearLeftovers(server: DaemonServer): Promise<boolean> {
    const recordFile = installRecordPath(this.options.runDir, server.uuid);
    const record = await readInstallRecord(recordFile);
    if (ownedElsewhere(record))
      throw new DaemonBusyError('An install of this server is running in another instance of the service.');
    if (record?.process) killInstallProcess(record.process);
    // Ours may have started before its record said so.
    const ownProcess = this.processes.get(server.uuid);
    if (ownProcess) killInstallProcess(ownProcess);
    // The server's network is detached with the box: not while the server itself runs.
    if (this.options.containers && !this.options.serverRunning(server.uuid))
      await removeInstallBox(this.options.containers, this.options.runDir, server.uuid);
    if (!this.running.has(server.uuid)) {
      await fs.rm(this.scriptFile(server.uuid), { force: true });
      await removeInstallRecord(recordFile);
    }
    return record !== null;
  }
}
