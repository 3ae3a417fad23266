import { DaemonError } from '../../daemon/daemon.js';
import { CliError } from '../command.js';

/** What the daemon refused (a bad name, a failed build, a missing file) is the command's one-line reason. */
export function imageCommandError(err: unknown): unknown {
  return err instanceof DaemonError ? new CliError(err.message) : err;
}

/**
 * The tools' progress lines, on standard error when it is a terminal; a
 * script reading standard error gets only the one-line reason of a failure
 * (which carries the tool's last lines).
 */
export const showProgress: ((line: string) => void) | undefined = process.stderr.isTTY
  ? (line) => process.stderr.write(`${line}\n`)
  : undefined;
