/**
 * The console's output (docs/reference/power-and-console.md#websocket): the
 * server's recent lines when the socket connects (`send logs`), then each
 * `console output` and install frame as it comes, with the panel's own notes
 * (state changes, daemon errors); follows the newest line unless the reader
 * scrolled up.
 */
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { useSocketFrames } from '../../lib/server-context';
import type { ServerSocket } from '../../lib/socket';

const MAX_LINES = 1000;
// Colours and cursor moves a game server prints for terminals.
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;

interface Line {
  id: number;
  text: string;
  kind: 'output' | 'panel' | 'error';
}

export function ConsoleOutput({ socket, suspended }: { socket: ServerSocket | null; suspended: boolean }) {
  const [lines, setLines] = useState<Line[]>([]);
  const nextId = useRef(0);
  const output = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const lastStatus = useRef<string | null>(null);

  const append = (text: string, kind: Line['kind']) =>
    setLines((current) => {
      const added = text
        .replace(ANSI, '')
        .split(/\r?\n/)
        .map((part) => ({ id: nextId.current++, text: part, kind }));
      const next = current.concat(added);
      return next.length > MAX_LINES ? next.slice(next.length - MAX_LINES) : next;
    });

  const backlogRetry = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  // The recent lines and the figures, asked for again on every (re)connection. The socket takes two
  // `send logs` per 5 seconds (a reader switching sections quickly asks more often): a request held
  // back is asked again a second later, and the lines shown meanwhile make way for the backlog.
  const requestBacklog = useCallback(() => {
    clearTimeout(backlogRetry.current);
    const ask = () => {
      const sent = socket?.send('send logs');
      if (sent === 'sent') setLines([]);
      if (sent === 'throttled') backlogRetry.current = setTimeout(ask, 1_000);
    };
    ask();
    socket?.send('send stats');
  }, [socket]);

  // The socket may have authenticated before this section was opened.
  useEffect(() => {
    if (socket?.state === 'connected') requestBacklog();
    return () => clearTimeout(backlogRetry.current);
  }, [socket, requestBacklog]);

  useSocketFrames(socket, (frame) => {
    switch (frame.event) {
      case 'auth success':
        requestBacklog();
        break;
      case 'console output':
        append(String(frame.args[0] ?? ''), 'output');
        break;
      // docs/reference/eggs-and-installs.md: an install's output, live, as Pterodactyl's console shows it.
      case 'install started':
        append('[Quetzal] Installation started.', 'panel');
        break;
      case 'install output':
        append(String(frame.args[0] ?? ''), 'output');
        break;
      case 'install completed':
        append('[Quetzal] Installation completed.', 'panel');
        break;
      case 'daemon error':
        append(`[Quetzal] ${String(frame.args[0] ?? 'The daemon reported an error.')}`, 'error');
        break;
      case 'status': {
        // Changes only: every (re)connection starts with the current state.
        const status = String(frame.args[0]);
        if (lastStatus.current !== null && lastStatus.current !== status)
          append(`[Quetzal] Server marked as ${status}.`, 'panel');
        lastStatus.current = status;
        break;
      }
      default:
        break;
    }
  });

  // Follows the output while the reader is at the bottom; leaves them be when they scrolled up.
  useLayoutEffect(() => {
    const element = output.current;
    if (element && stick.current) element.scrollTop = element.scrollHeight;
  }, [lines]);

  return (
    <div
      class="terminal"
      ref={output}
      role="log"
      aria-label="Console output"
      tabIndex={0}
      onScroll={(e) => {
        const el = e.currentTarget;
        stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
      }}
    >
      {lines.length === 0 && (
        <div class="terminal-line panel">
          {suspended
            ? 'Suspended: the console is closed while the server is suspended.'
            : socket?.state === 'connected'
              ? 'No output yet.'
              : 'Connecting to the console…'}
        </div>
      )}
      {lines.map((line) => (
        <div key={line.id} class={`terminal-line ${line.kind}`}>
          {line.text || '\u00a0'}
        </div>
      ))}
    </div>
  );
}
