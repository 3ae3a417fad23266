import { CommandLine } from '../components/console/command-line';
import { ConsoleFigures } from '../components/console/console-figures';
import { ConsoleOutput } from '../components/console/console-output';
import { PowerButtons } from '../components/console/power-buttons';
import { Notice } from '../components/ui';
import { useServer } from '../lib/server-context';

/**
 * Live console (docs/reference/power-and-console.md#websocket, docs/reference/web-console.md): the output and
 * the command line beside the power buttons, memory and CPU graphs, disk and uptime.
 */
export function ConsoleSection() {
  const { id, socket, permissions, state, server } = useServer();
  // Suspended: no socket is opened (server.tsx), so nothing is "connecting" and no power change is allowed.
  const suspended = server.attributes.status === 'suspended' || server.attributes.is_suspended;
  const canConsole = permissions.can('control.console') && !suspended;

  return (
    <section aria-labelledby="console-title" class="console-grid">
      <h2 id="console-title" class="visually-hidden">
        Console
      </h2>
      <div class="console-main">
        {socket?.state === 'unavailable' && <Notice>The live console is unavailable: {socket.problem}</Notice>}
        {socket?.state === 'reconnecting' && <Notice>{socket.problem ?? 'Reconnecting…'}</Notice>}
        <ConsoleOutput socket={socket} suspended={suspended} />
        <CommandLine server={id} socket={socket} canConsole={canConsole} />
      </div>
      <aside class="console-side">
        <PowerButtons
          server={id}
          state={state}
          permissions={permissions}
          suspended={suspended}
          socketUnavailable={socket?.state === 'unavailable'}
        />
        <ConsoleFigures socket={socket} server={server} />
      </aside>
    </section>
  );
}
