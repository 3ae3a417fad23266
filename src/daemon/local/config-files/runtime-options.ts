import type { DaemonServer } from '../../daemon.js';
import type { ProcessLogger, SupervisedServer } from '../process/supervisor-options.js';
import { applyConfigFiles, type ConfigFileStore } from './apply-config-files.js';
import { daemonValues } from './daemon-values.js';

/**
 * What a server's egg adds to how the supervisor runs it (docs/reference/eggs-and-installs.md): its
 * environment, its done lines, and its config files edited before each
 * spawn (through `store`, the files layer; `confined` decides what
 * `{{config.docker.interface}}` is, daemon-values.ts).
 */
export function runtimeOptions(
  server: DaemonServer,
  store: ConfigFileStore,
  consoleLog: string,
  log: ProcessLogger,
  confined: boolean,
): Pick<SupervisedServer, 'environment' | 'doneLines' | 'beforeLaunch'> {
  return {
    ...(server.environment ? { environment: server.environment } : {}),
    ...(server.doneLines && server.doneLines.length > 0 ? { doneLines: server.doneLines } : {}),
    ...(server.configFiles && server.configFiles.length > 0
      ? {
          beforeLaunch: () => applyConfigFiles(store, server, consoleLog, log, daemonValues(confined, server.allocations)),
        }
      : {}),
  };
}
