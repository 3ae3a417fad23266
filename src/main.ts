import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildApp } from './app.js';
import { BackgroundJobs } from './background.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import { recordProcessEvents } from './modules/servers/process-events.js';
import { ServerEvents } from './server-events.js';
import type { LocalDaemon } from './daemon/local/local-daemon.js';
import type { DatabaseHandle } from './db/database.js';
import { startActivityPruner } from './modules/activity/activity.pruner.js';
import { recoverFileOperations, startFileOperationRecovery } from './modules/backups/backups.recovery.js';
import { recoverInstalls } from './modules/installs/install.recovery.js';
import { recoverDatabaseCreations, startDatabaseCreationRecovery } from './modules/databases/databases.recovery.js';
import { loadAppKey } from './app-key.js';
import { schedulesChangedNotifier } from './timing/wakeup.js';
import { startScheduler, type SchedulerHandle } from './scheduler/scheduler.js';
import { startSftpServer, type RunningSftpServer } from './modules/sftp/sftp.server.js';

/**
 * The long-running service: the HTTP API and/or the scheduler over an open,
 * migrated database and a local daemon. `quetzal serve` and `quetzal worker`
 * (src/cli/commands) start it and stop it on SIGINT/SIGTERM.
 */
export interface ServiceDeps {
  config: Config;
  database: DatabaseHandle;
  daemon: LocalDaemon;
  clock: Clock;
  logger: Logger;
}

export interface ServiceOptions {
  /** Serve the HTTP API on HOST:PORT. */
  api: boolean;
  /** Run the scheduler in this process. */
  scheduler: boolean;
}

export interface RunningService {
  /** Where the API listens (the real port when PORT=0); undefined without the API. */
  readonly url: string | undefined;
  readonly app: FastifyInstance | undefined;
  readonly scheduler: SchedulerHandle | undefined;
  /** The SFTP server (docs/reference/files-and-sftp.md), beside the API unless SFTP_PORT=0. */
  readonly sftp: RunningSftpServer | undefined;
  /** Graceful: stop accepting, stop the scheduler, let background work finish, stop processes. Idempotent. */
  stop(): Promise<void>;
}

/** Something started alongside the service that must be stopped with it. */
interface Stoppable {
  stop(): Promise<void> | void;
}

export async function startService(deps: ServiceDeps, options: ServiceOptions): Promise<RunningService> {
  const { config, database, daemon, clock, logger } = deps;
  // Stops processes an instance that died left behind, and creates the daemon's folders.
  await daemon.start();
  // Restores and backups a dead instance left halfway: finished or undone before anyone can act on their servers.
  await recoverFileOperations({ db: database.db, clock, daemon }, logger);
  // Installs a dead instance left `installing` (docs/reference/eggs-and-installs.md): ended, marked `install_failed`.
  await recoverInstalls({ db: database.db, clock, daemon }, logger);
  // Databases a dead instance created on a host without writing their row (docs/DATABASES.md): dropped there.
  const databaseRecovery = { db: database.db, clock, appKey: loadAppKey(config.dataDir, { APP_KEY: config.appKey }) };
  await recoverDatabaseCreations(databaseRecovery, logger);
  const jobs = new BackgroundJobs(logger);
  // One for the process: backups the scheduler runs reach the API's live consoles too (docs/reference/power-and-console.md#websocket).
  const serverEvents = new ServerEvents((err) => logger.error({ err }, 'a server event listener failed'));

  let scheduler: SchedulerHandle | undefined;
  let app: FastifyInstance | undefined;
  let url: string | undefined;
  let sftp: RunningSftpServer | undefined;
  const extras: Stoppable[] = [
    startFileOperationRecovery({ db: database.db, clock, daemon }, logger),
    startDatabaseCreationRecovery(databaseRecovery, logger),
    // Before any start, so no out-of-memory kill of this instance's servers goes unlogged.
    { stop: recordProcessEvents({ db: database.db, clock, daemon }, logger) },
  ];

  let stopped: Promise<void> | undefined;
  const shutdown = async () => {
    // Stop accepting first (in-flight requests finish), then stop claiming runs.
    if (app) await settle(logger, 'http server', app.close());
    // Open SFTP files are closed (their volume holds released) before the daemon goes.
    if (sftp) await settle(logger, 'sftp server', sftp.stop());
    if (scheduler) await settle(logger, 'scheduler', scheduler.stop());
    for (const extra of extras) await settle(logger, 'background task', Promise.resolve(extra.stop()));
    // A restore or backup in flight finishes (or fails) before its files go away.
    await jobs.idle();
    await settle(logger, 'daemon', daemon.close());
  };

  try {
    if (options.api && config.sftpPort !== 0) {
      sftp = await startSftpServer({ db: database.db, clock, daemon, config }, logger, {
        host: config.sftpHost,
        port: config.sftpPort,
      });
    }
    if (options.api) {
      app = await buildApp({
        sftpPort: sftp?.port,
        serverEvents,
        db: database.db,
        dialect: database.dialect,
        config,
        clock,
        daemon,
        jobs,
        // Wakes this process's scheduler, and (PostgreSQL) every other instance's.
        onSchedulesChanged: schedulesChangedNotifier(
          { db: database.db, dialect: database.dialect, logger },
          { wake: () => scheduler?.wake() },
        ),
      });
      await app.listen({ host: config.host, port: config.port });
      url = listeningUrl(config, app.server.address() as AddressInfo);
      logger.info({ url }, 'quetzal is listening');
    }
    if (options.scheduler) {
      scheduler = startScheduler({
        db: database.db,
        dialect: database.dialect,
        config,
        clock,
        daemon,
        jobs,
        logger,
        serverEvents,
      });
      logger.info({ instance: scheduler.instanceId }, 'scheduler started');
    }
    if (options.scheduler) {
      // Background upkeep runs where the scheduler runs: entries older than ACTIVITY_PRUNE_DAYS go.
      extras.push(startActivityPruner({ db: database.db, clock, config, logger }));
    }
  } catch (err) {
    await shutdown();
    throw err;
  }

  return {
    url,
    app,
    scheduler,
    sftp,
    stop() {
      stopped ??= shutdown();
      return stopped;
    },
  };
}

/** Waits for `work`, logging (not throwing) a failure: one part failing to stop must not keep the rest running. */
async function settle(logger: Logger, what: string, work: Promise<unknown>): Promise<void> {
  try {
    await work;
  } catch (err) {
    logger.error({ err }, `${what} did not stop cleanly`);
  }
}

/**
 * The URL clients reach the API at: APP_URL when it was set, otherwise the
 * address actually bound (the real port when PORT=0; loopback for a wildcard host).
 */
export function listeningUrl(config: Config, address: AddressInfo): string {
  const defaultAppUrl = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`;
  if (config.appUrl !== defaultAppUrl) return config.appUrl;
  let host = address.address;
  if (host === '0.0.0.0') host = '127.0.0.1';
  if (host === '::') host = '::1';
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}
