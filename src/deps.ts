import type { Database, DialectName } from './db/database.js';
import type { Config } from './config.js';
import type { Clock } from './clock.js';
import type { Daemon } from './daemon/daemon.js';
import type { BackgroundJobs } from './background.js';
import type { ServerEvents } from './server-events.js';

/**
 * Everything a request handler, a service or the scheduler may need, passed
 * explicitly (no global decorators). Modules take only what they use, narrowed
 * with `Pick<AppDeps, ...>`.
 */
export interface AppDeps {
  db: Database;
  dialect: DialectName;
  config: Config;
  clock: Clock;
  daemon: Daemon;
  jobs: BackgroundJobs;
  /** Wakes the scheduler when schedules change (no-op without one). */
  onSchedulesChanged?: () => void;
  /** Told when a backup or a restore ends, for live consoles (docs/reference/power-and-console.md#websocket); buildApp makes one when absent. */
  serverEvents?: ServerEvents;
  /** The port the SFTP server of this process bound (docs/reference/files-and-sftp.md's `sftp_details`); absent: SFTP_PORT as configured. */
  sftpPort?: number;
  /** The service's secret (src/app-key.ts); buildApp loads it (APP_KEY or `$DATA_DIR/app-key`) when absent. */
  appKey?: Buffer;
}
