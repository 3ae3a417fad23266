/**
 * How a server is asked to stop: no stop command means SIGTERM; Pterodactyl's
 * `^C` means SIGINT (writing "^C" to stdin would do nothing); anything else is
 * a console line.
 */
export function stopRequest(stopCommand: string | null): { signal: NodeJS.Signals } | { line: string } {
  if (!stopCommand) return { signal: 'SIGTERM' };
  if (stopCommand.trim().toUpperCase() === '^C') return { signal: 'SIGINT' };
  return { line: stopCommand };
}
