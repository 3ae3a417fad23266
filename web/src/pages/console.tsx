import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { post } from '../api/client';
import { ErrorText, Notice, Sparkline } from '../components/ui';
import { bytes, uptime } from '../lib/format';
import { useServer, useSocketFrames } from '../lib/server-context';

/** The socket closes on a message over 4 KiB (src/modules/websocket MAX_INBOUND_FRAME_BYTES). */
const MAX_FRAME_BYTES = 4 * 1024;
/** The input's own limit: the frame's wrapping takes some of the 4 KiB. */
const MAX_COMMAND_CHARS = 4000;

function commandFrameBytes(line: string): number {
  return new TextEncoder().encode(JSON.stringify({ event: 'send command', args: [line] })).length;
}

/** Live console (docs/reference/power-and-console.md#websocket, docs/reference/web-console.md): output, a command line, power buttons, memory and CPU graphs. */

const MAX_LINES = 1000;
const SAMPLES = 60;
// Colours and cursor moves a game server prints for terminals.
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;

interface Stats {
  memory_bytes: number;
  memory_limit_bytes: number;
  cpu_absolute: number;
  disk_bytes: number;
  uptime: number;
}

interface Line {
  id: number;
  text: string;
  kind: 'output' | 'panel' | 'error';
}

const POWER = [
  {
    signal: 'start',
    label: 'Start',
    permission: 'control.start',
    when: (state: string | null) => state !== 'running' && state !== 'starting',
  },
  { signal: 'restart', label: 'Restart', permission: 'control.restart', when: (state: string | null) => state !== 'offline' },
  { signal: 'stop', label: 'Stop', permission: 'control.stop', when: (state: string | null) => state !== 'offline' },
  { signal: 'kill', label: 'Kill', permission: 'control.stop', when: (state: string | null) => state !== 'offline' },
] as const;

function parseStats(raw: unknown): Stats | null {
  try {
    const value = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Partial<Stats>;
    if (typeof value.memory_bytes !== 'number' || typeof value.cpu_absolute !== 'number') return null;
    return {
      memory_bytes: value.memory_bytes,
      memory_limit_bytes: value.memory_limit_bytes ?? 0,
      cpu_absolute: value.cpu_absolute,
      disk_bytes: value.disk_bytes ?? 0,
      uptime: value.uptime ?? 0,
    };
  } catch {
    return null;
  }
}

export function ConsoleSection() {
  const { id, socket, permissions, state, server } = useServer();
  const [lines, setLines] = useState<Line[]>([]);
  const [stats, setStats] = useState<Stats | null>(null);
  const [memory, setMemory] = useState<number[]>([]);
  const [cpu, setCpu] = useState<number[]>([]);
  const [command, setCommand] = useState('');
  const [history, setHistory] = useState<string[]>([]);
  const [historyAt, setHistoryAt] = useState(-1);
  const [commandError, setCommandError] = useState<unknown>(null);
  const [powerError, setPowerError] = useState<unknown>(null);
  const [powerBusy, setPowerBusy] = useState<string | null>(null);
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

  const requestBacklog = () => {
    setLines([]);
    socket?.send('send logs');
    socket?.send('send stats');
  };

  // The socket may have authenticated before this section was opened.
  useEffect(() => {
    if (socket?.state === 'connected') requestBacklog();
  }, [socket]);

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
        // Stopped or killed: no memory in use, no uptime; old figures would read as live.
        if (status === 'offline') {
          setStats(null);
          setMemory([]);
          setCpu([]);
        }
        break;
      }
      case 'stats': {
        const sample = parseStats(frame.args[0]);
        if (!sample) break;
        setStats(sample);
        setMemory((values) => values.concat(sample.memory_bytes).slice(-SAMPLES));
        setCpu((values) => values.concat(sample.cpu_absolute).slice(-SAMPLES));
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

  const sendCommand = async (event: Event) => {
    event.preventDefault();
    const line = command;
    if (line.trim() === '') return;
    setCommandError(null);
    if (commandFrameBytes(line) > MAX_FRAME_BYTES) {
      setCommandError(
        new Error(
          `This command is too long to send: the console takes at most ${MAX_FRAME_BYTES} bytes a message (accented letters and symbols take more than one).`,
        ),
      );
      return;
    }
    try {
      if (!socket?.send('send command', line))
        await post(`/api/client/servers/${encodeURIComponent(id)}/command`, { command: line });
      setHistory((past) => [line, ...past.filter((entry) => entry !== line)].slice(0, 50));
      setHistoryAt(-1);
      setCommand('');
    } catch (err) {
      setCommandError(err);
    }
  };

  const browseHistory = (event: KeyboardEvent) => {
    if (event.key !== 'ArrowUp' && event.key !== 'ArrowDown') return;
    event.preventDefault();
    const at = Math.max(-1, Math.min(history.length - 1, historyAt + (event.key === 'ArrowUp' ? 1 : -1)));
    setHistoryAt(at);
    setCommand(at === -1 ? '' : (history[at] ?? ''));
  };

  const power = async (signal: string) => {
    setPowerBusy(signal);
    setPowerError(null);
    try {
      await post(`/api/client/servers/${encodeURIComponent(id)}/power`, { signal });
    } catch (err) {
      setPowerError(err);
    } finally {
      setPowerBusy(null);
    }
  };

  const memoryLimit = stats?.memory_limit_bytes || server.attributes.limits.memory * 1024 * 1024;
  const cpuLimit = server.attributes.limits.cpu || 100;
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
        <form class="command" onSubmit={(event) => void sendCommand(event)}>
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
            onInput={(e) => setCommand(e.currentTarget.value)}
            onKeyDown={browseHistory}
          />
          <button type="submit" disabled={!canConsole}>
            Send
          </button>
        </form>
        <ErrorText error={commandError} />
      </div>
      <aside class="console-side">
        <div class="power" role="group" aria-label="Power">
          {POWER.map(({ signal, label, permission, when }) => {
            const allowed = permissions.can(permission);
            return (
              <button
                key={signal}
                type="button"
                class={signal === 'kill' || signal === 'stop' ? 'danger' : signal === 'start' ? 'primary' : ''}
                disabled={suspended || !allowed || !when(state) || powerBusy !== null}
                title={allowed ? undefined : `You lack the ${permission} permission`}
                onClick={() => void power(signal)}
              >
                {label}
              </button>
            );
          })}
        </div>
        {POWER.every(({ permission }) => !permissions.can(permission)) && (
          <p class="muted small">
            {permissions.known || socket?.state === 'unavailable'
              ? 'You may not change this server’s power state.'
              : 'Checking what you may do…'}
          </p>
        )}
        <ErrorText error={powerError} />
        <div class="card stat">
          <div class="stat-head">
            <span>Memory</span>
            <strong>
              {stats ? bytes(stats.memory_bytes) : '—'}
              {memoryLimit > 0 && <span class="muted"> / {bytes(memoryLimit)}</span>}
            </strong>
          </div>
          <Sparkline values={memory} floor={16 * 1024 * 1024} label="Memory use over the last two minutes" />
        </div>
        <div class="card stat">
          <div class="stat-head">
            <span>CPU</span>
            <strong>
              {stats ? `${stats.cpu_absolute.toFixed(1)} %` : '—'}
              {server.attributes.limits.cpu > 0 && <span class="muted"> / {cpuLimit} %</span>}
            </strong>
          </div>
          <Sparkline values={cpu} floor={5} label="CPU use over the last two minutes" />
        </div>
        <dl class="card facts">
          <dt>Disk</dt>
          <dd>{stats ? bytes(stats.disk_bytes) : '—'}</dd>
          <dt>Uptime</dt>
          <dd>{stats && stats.uptime > 0 ? uptime(stats.uptime) : '—'}</dd>
        </dl>
      </aside>
    </section>
  );
}
