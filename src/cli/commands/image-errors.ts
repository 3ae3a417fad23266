import { DaemonError } from '../../daemon/daemon.js';
import { CliError } from '../command.js';

/** What the daemon refused (a bad name, a failed build, a missing file) is the command's one-line reason. */
export function imageCommandError(err: unknown): unknown {
  return err instanceof DaemonError ? new CliError(err.message) : err;
}
