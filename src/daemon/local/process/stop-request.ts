/** Signals an egg's `config.stop` can name as `^<signal>` (Wings' "signal" stop type). */
const NAMED_SIGNALS: ReadonlySet<string> = new Set([
  'SIGINT',
  'SIGTERM',
  'SIGABRT',
  'SIGKILL',
  'SIGHUP',
  'SIGQUIT',
  'SIGUSR1',
  'SIGUSR2',
]);

/**
 * How a server is asked to stop: no stop command means SIGTERM; Pterodactyl's
 * `^C` means SIGINT (writing "^C" to stdin would do nothing); `^SIGTERM`,
 * `^TERM` and the like mean that signal (one Wings does not know, SIGKILL, as
 * Wings does); anything else is a console line.
 */
export function stopRequest(stopCommand: string | null): { signal: NodeJS.Signals } | { line: string } {
  if (!stopCommand) return { signal: 'SIGTERM' };
  const command = stopCommand.trim().toUpperCase();
  if (command === '^C') return { signal: 'SIGINT' };
  if (command.startsWith('^') && /^\^[A-Z0-9]+$/.test(command)) {
    const name = command.startsWith('^SIG') ? command.slice(1) : `SIG${command.slice(1)}`;
    return { signal: (NAMED_SIGNALS.has(name) ? name : 'SIGKILL') as NodeJS.Signals };
  }
  return { line: stopCommand };
}
