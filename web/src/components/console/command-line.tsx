/**
 * The console's command line: sends a line (over the socket, else POST
 * /command), keeps the last 50 for ArrowUp/ArrowDown, and keeps a refused
 * command in the input so it can be sent again: too long, held back by the
 * socket's rate limit, or refused by the socket after all (its `throttled`
 * answer puts the command back and says so, politely, in a live region).
 */
import { useRef, useState } from 'preact/hooks';
import { CommandThrottledError, MAX_COMMAND_CHARS, refusedCommandText, useSendCommand } from '../../api/console';
import { useSocketFrames } from '../../lib/server-context';
import type { ServerSocket } from '../../lib/socket';
import { ErrorText } from '../ui';

const HISTORY = 50;
/** A `throttled` answer later than this after the last command is about another frame. */
const REFUSAL_WINDOW_MS = 2_000;

interface CommandLineProps {
  server: string;
  socket: ServerSocket | null;
  canConsole: boolean;
}

export function CommandLine({ server, socket, canConsole }: CommandLineProps) {
  const send = useSendCommand(server, socket);
  const [command, setCommand] = useState('');
  const [history, setHistory] = useState<string[]>([]);
  const [historyAt, setHistoryAt] = useState(-1);
  const [refused, setRefused] = useState<string | null>(null);
  const lastSent = useRef<{ line: string; at: number } | null>(null);

  useSocketFrames(socket, (frame) => {
    if (frame.event !== 'throttled') return;
    const what = frame.args[0];
    const last = lastSent.current;
    if ((what !== 'send command' && what !== 'global') || !last || Date.now() - last.at > REFUSAL_WINDOW_MS) return;
    lastSent.current = null;
    setCommand((current) => (current === '' ? last.line : current));
    setRefused(refusedCommandText(last.line));
  });

  const submit = (event: Event) => {
    event.preventDefault();
    const line = command;
    if (line.trim() === '') return;
    setRefused(null);
    send.mutate(line, {
      onSuccess: (channel) => {
        lastSent.current = channel === 'socket' ? { line, at: Date.now() } : null;
        setHistory((past) => [line, ...past.filter((entry) => entry !== line)].slice(0, HISTORY));
        setHistoryAt(-1);
        setCommand((current) => (current === line ? '' : current));
      },
    });
  };

  const browseHistory = (event: KeyboardEvent) => {
    if (event.key !== 'ArrowUp' && event.key !== 'ArrowDown') return;
    event.preventDefault();
    const at = Math.max(-1, Math.min(history.length - 1, historyAt + (event.key === 'ArrowUp' ? 1 : -1)));
    setHistoryAt(at);
    setCommand(at === -1 ? '' : (history[at] ?? ''));
  };

  const throttled = send.error instanceof CommandThrottledError ? send.error : null;
  const notice = refused ?? throttled?.message ?? null;
  return (
    <>
      <form class="command" onSubmit={submit}>
        <label for="console-command" class="visually-hidden">
          Command
        </label>
        <span class="prompt" aria-hidden="true">
          $
        </span>
        <input
          id="console-command"
          autocomplete="off"
          spellcheck={false}
          placeholder={canConsole ? 'Type a command…' : 'You may not send commands to this server'}
          disabled={!canConsole}
          value={command}
          maxLength={MAX_COMMAND_CHARS}
          aria-describedby="console-command-notice"
          onInput={(e) => setCommand(e.currentTarget.value)}
          onKeyDown={browseHistory}
        />
        <button type="submit" disabled={!canConsole || send.isPending}>
          Send
        </button>
      </form>
      {/* Present before anything is said in it, so screen readers announce what appears. */}
      <div id="console-command-notice" aria-live="polite">
        {notice && <p class="notice">{notice}</p>}
      </div>
      {!throttled && <ErrorText error={send.error} />}
    </>
  );
}
