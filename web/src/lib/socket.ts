import { ApiError, get, messageOf } from '../api/client';
import { serverUrl } from '../api/servers';
import { FramePacer } from './frame-pacer';

/**
 * A server's live connection: Pterodactyl's websocket (docs/reference/power-and-console.md#websocket), spoken as
 * Wings speaks it. Fetches a token from the client API, authenticates, renews
 * the token when told it is expiring, and reconnects after a drop. Pages
 * subscribe to the frames they show. What the socket's rate limits would
 * refuse is held back here (FramePacer), so the page can say so.
 */

export type SocketState = 'connecting' | 'connected' | 'reconnecting' | 'unavailable';

export interface Frame {
  event: string;
  args: unknown[];
}

interface Credentials {
  token: string;
  socket: string;
}

type Listener = (frame: Frame) => void;

/** What became of a frame: sent, held back by the socket's rate limit, or not sent because the socket is not live. */
export type SendResult = 'sent' | 'throttled' | 'closed';

const MAX_BACKOFF_MS = 10_000;

/** The `permissions` claim of a websocket token: what the panel says this user may do on the server. */
function permissionsOf(token: string): string[] | null {
  try {
    const payload = token.split('.')[1];
    if (!payload) return null;
    const json = atob(payload.replace(/-/g, '+').replace(/_/g, '/'));
    const claims: unknown = JSON.parse(json);
    const permissions = (claims as { permissions?: unknown }).permissions;
    return Array.isArray(permissions) ? permissions.filter((p): p is string => typeof p === 'string') : null;
  } catch {
    return null;
  }
}

export class ServerSocket {
  state: SocketState = 'connecting';
  /** Why the console is not live, in words for the page. */
  problem: string | null = null;
  permissions: string[] | null = null;
  private socket: WebSocket | null = null;
  private listeners = new Set<Listener>();
  private stateListeners = new Set<() => void>();
  private stopped = false;
  private attempts = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private pacer = new FramePacer();

  constructor(private readonly server: string) {}

  start(): void {
    void this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.socket?.close(1000);
    this.socket = null;
  }

  on(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onState(listener: () => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  /**
   * Sends a frame. 'closed' when the socket is not authenticated (the caller may use the HTTP route
   * instead); 'throttled' when the socket's rate limit would refuse it now (nothing was sent).
   */
  send(event: string, ...args: unknown[]): SendResult {
    if (this.state !== 'connected' || this.socket?.readyState !== WebSocket.OPEN) return 'closed';
    if (!this.pacer.admit(event)) return 'throttled';
    this.socket.send(JSON.stringify({ event, args }));
    return 'sent';
  }

  /** The token, on open and to renew: counted by the pacer but never held back, since nothing else works without it. */
  private authenticate(socket: WebSocket, token: string): void {
    this.pacer.admit('auth');
    socket.send(JSON.stringify({ event: 'auth', args: [token] }));
  }

  private setState(state: SocketState, problem: string | null = null): void {
    this.state = state;
    this.problem = problem;
    for (const listener of this.stateListeners) listener();
  }

  private async credentials(): Promise<Credentials> {
    const body = await get<{ data: Credentials }>(serverUrl(this.server, 'websocket'));
    this.permissions = permissionsOf(body.data.token);
    return body.data;
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    let credentials: Credentials;
    try {
      credentials = await this.credentials();
    } catch (err) {
      if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) {
        // No permission, no such route, a suspended server: retrying will not help.
        this.setState('unavailable', err.message);
        return;
      }
      this.retry(messageOf(err));
      return;
    }
    if (this.stopped) return;
    const socket = new WebSocket(credentials.socket);
    this.socket = socket;
    // The service counts each socket's frames from its opening: so does the pacer.
    this.pacer = new FramePacer();
    socket.onopen = () => this.authenticate(socket, credentials.token);
    socket.onmessage = (message) => this.receive(socket, message.data);
    socket.onclose = () => {
      if (this.socket !== socket || this.stopped) return;
      this.socket = null;
      if (this.state !== 'unavailable') this.retry('The live connection dropped; reconnecting…');
    };
  }

  private retry(problem: string): void {
    if (this.stopped) return;
    this.setState('reconnecting', problem);
    const delay = Math.min(MAX_BACKOFF_MS, 500 * 2 ** this.attempts++);
    this.retryTimer = setTimeout(() => void this.connect(), delay);
  }

  private receive(socket: WebSocket, data: unknown): void {
    let frame: Frame;
    try {
      const parsed = JSON.parse(String(data)) as { event?: unknown; args?: unknown };
      if (typeof parsed.event !== 'string') return;
      frame = { event: parsed.event, args: Array.isArray(parsed.args) ? parsed.args : [] };
    } catch {
      return;
    }
    switch (frame.event) {
      case 'auth success':
        this.attempts = 0;
        this.setState('connected');
        break;
      case 'token expiring':
      case 'token expired':
        // A fresh token on the same socket, as Pterodactyl's front end does.
        this.credentials().then(
          ({ token }) => socket.readyState === WebSocket.OPEN && this.authenticate(socket, token),
          (err: unknown) => {
            if (err instanceof ApiError && err.status === 403) {
              this.setState('unavailable', err.message);
              socket.close();
            }
          },
        );
        break;
      case 'throttled':
        // The socket refused a frame (args: its event, or `global`) and will not say so again for the next:
        // hold that kind back until the socket has room for it again.
        this.pacer.exhaust(String(frame.args[0] ?? 'global'));
        break;
      case 'jwt error':
        // A token the socket would not take: closing makes a new attempt with a fresh one (and a 403 then says why).
        this.setState('reconnecting', `The live connection was refused: ${String(frame.args[0] ?? 'invalid token')}.`);
        socket.close();
        break;
      default:
        break;
    }
    for (const listener of this.listeners) listener(frame);
  }
}
