import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { ServerState } from '../../daemon/daemon.js';
import type { ServerRow } from '../../db/schema.js';
import type { Permission } from '../../http/permissions.js';
import type { ServerEvent } from '../../server-events.js';
import { daemonServer } from '../servers/servers.service.js';
import {
  ConsoleThrottle,
  DEFAULT_THROTTLE,
  THROTTLE_MESSAGE,
  THROTTLE_STOP_MESSAGE,
  type ThrottleSettings,
} from './console-throttle.js';
import { CLOSE, OUTBOUND } from './websocket.frames.js';
import { findServersByUuids } from './websocket.repository.js';
import { recheckSocketAccess, type WebsocketDeps } from './websocket.service.js';
import { SocketSession, type SessionHost } from './websocket.session.js';
import { backupCompletedPayload, statsPayload } from './websocket.transformer.js';

export interface HubOptions {
  /** `stats` while a server runs (Wings: every 2 s or so). */
  statsIntervalMs?: number;
  /** The suspension poll: the rows of every server with sockets, in one statement (docs/reference/power-and-console.md#websocket: closed within 5 s). */
  statusPollMs?: number;
  /** The re-check of every socket's user and rights (at most this long after a change made elsewhere). */
  accessCheckMs?: number;
  /** Authenticated sockets one user may hold on one server. */
  maxSocketsPerUser?: number;
  /** Sockets not yet authenticated, across the service. */
  maxPendingSockets?: number;
  /** Wings' console throttle (docs/reference/power-and-console.md#servers-outlive-the-service; CONSOLE_THROTTLE_*). */
  consoleThrottle?: ThrottleSettings;
}

const DEFAULTS: Required<HubOptions> = {
  statsIntervalMs: 2_000,
  statusPollMs: 3_000,
  accessCheckMs: 30_000,
  maxSocketsPerUser: 20,
  maxPendingSockets: 1_000,
  consoleThrottle: DEFAULT_THROTTLE,
};
const TICK_MS = 1_000;

/** One server with sockets: its row as last read, its state as last told, its console reader, its sockets. */
class ServerChannel {
  readonly sessions = new Set<SocketSession>();
  state: ServerState | null = null;
  sampling = false;
  stopConsole: () => void = () => {};
  throttle: ConsoleThrottle | null = null;

  constructor(public server: ServerRow) {}

  broadcast(event: string, args?: readonly string[], permission?: Permission): void {
    for (const session of this.sessions) session.deliver(event, args, permission);
  }
}

/**
 * The live-console fan-out (docs/reference/power-and-console.md#websocket): per server with authenticated sockets,
 * one console reader (the daemon's watchConsole), one stats sampler and one
 * status, shared by all its sockets; for all servers together, one poll of
 * their rows (suspension, deletion) and one re-check of every socket's user
 * and rights. Backup events come from the in-process ServerEvents.
 */
export class SocketHub implements SessionHost {
  private readonly options: Required<HubOptions>;
  private readonly channels = new Map<string, ServerChannel>();
  private readonly sessions = new Set<SocketSession>();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly unsubscribes: (() => void)[] = [];
  /** When the last re-check ran, in real time and on the injected clock: due when either says so. */
  private lastAccessCheck = { real: performance.now(), clock: 0 };
  private polling = false;
  private closed = false;

  constructor(
    readonly deps: WebsocketDeps,
    readonly log: FastifyBaseLogger,
    options: HubOptions = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
    this.lastAccessCheck.clock = deps.clock.now();
  }

  start(): void {
    this.unsubscribes.push(this.deps.daemon.onStateChange((serverUuid, state) => this.stateChanged(serverUuid, state)));
    this.unsubscribes.push(this.deps.serverEvents.subscribe((event) => this.serverEvent(event)));
    this.every(TICK_MS, () => this.tick());
    this.every(this.options.statsIntervalMs, () => {
      for (const channel of this.channels.values()) void this.sample(channel);
    });
    this.every(this.options.statusPollMs, () => void this.poll());
  }

  /** A socket just opened on `/api/servers/<serverUuid>/ws`; it authenticates itself (`auth`). */
  accept(ws: WebSocket, serverUuid: string, ip: string): void {
    if (this.closed) {
      ws.close(CLOSE.restart, 'server shutting down');
      return;
    }
    let pending = 0;
    for (const session of this.sessions) if (!session.joined) pending += 1;
    if (pending >= this.options.maxPendingSockets) {
      ws.close(1013, 'too many connections waiting to authenticate');
      return;
    }
    this.sessions.add(new SocketSession(ws, serverUuid, ip, this));
  }

  join(session: SocketSession): boolean {
    const row = session.server;
    if (this.closed || !row) return false;
    const channel = this.channels.get(row.uuid) ?? this.open(row);
    let mine = 0;
    for (const other of channel.sessions) if (other.userId === session.userId) mine += 1;
    if (mine >= this.options.maxSocketsPerUser) {
      if (channel.sessions.size === 0) this.shut(channel);
      return false;
    }
    channel.sessions.add(session);
    return true;
  }

  forget(session: SocketSession): void {
    this.sessions.delete(session);
    const channel = this.channels.get(session.serverUuid);
    if (channel?.sessions.delete(session) && channel.sessions.size === 0) this.shut(channel);
  }

  /** Closes every socket (1012: clients reconnect to whichever instance answers) and stops listening. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    for (const unsubscribe of this.unsubscribes) unsubscribe();
    for (const session of [...this.sessions]) session.close(CLOSE.restart, 'server shutting down');
    for (const channel of [...this.channels.values()]) this.shut(channel);
  }

  private every(ms: number, run: () => void): void {
    const timer = setInterval(run, ms);
    timer.unref();
    this.timers.push(timer);
  }

  private open(row: ServerRow): ServerChannel {
    const channel = new ServerChannel(row);
    this.channels.set(row.uuid, channel);
    const throttle = new ConsoleThrottle(this.options.consoleThrottle);
    channel.stopConsole = this.deps.daemon.watchConsole(daemonServer(row), (line) => {
      switch (throttle.line()) {
        case 'forward':
          return channel.broadcast(OUTBOUND.consoleOutput, [line]);
        case 'drop':
          return;
        case 'strike':
          return channel.broadcast(OUTBOUND.consoleOutput, [THROTTLE_MESSAGE]);
        case 'breach':
          return this.stopForFlooding(channel, throttle);
      }
    });
    channel.throttle = throttle;
    void this.sample(channel);
    return channel;
  }

  /** The throttle's last activation (docs/reference/power-and-console.md#servers-outlive-the-service): the server is stopped, as Wings did, and that is said on its console and in the log. */
  private stopForFlooding(channel: ServerChannel, throttle: ConsoleThrottle): void {
    const target = daemonServer(channel.server);
    channel.broadcast(OUTBOUND.consoleOutput, [THROTTLE_MESSAGE]);
    channel.broadcast(OUTBOUND.consoleOutput, [THROTTLE_STOP_MESSAGE]);
    this.log.warn({ serverUuid: target.uuid }, 'stopping server instance, violating throttle limits');
    this.deps.daemon
      .power(target, 'stop')
      .catch((err: unknown) =>
        this.log.error({ err, serverUuid: target.uuid }, 'could not stop a server that violated the throttle limits'),
      )
      .finally(() => throttle.reset());
  }

  private shut(channel: ServerChannel): void {
    channel.stopConsole();
    if (this.channels.get(channel.server.uuid) === channel) this.channels.delete(channel.server.uuid);
  }

  private tick(): void {
    const now = this.deps.clock.now();
    const realNow = performance.now();
    for (const session of [...this.sessions]) session.tick(now, realNow);
  }

  private stateChanged(serverUuid: string, state: ServerState): void {
    const channel = this.channels.get(serverUuid);
    if (channel) this.setState(channel, state);
  }

  /** `status` to the server's sockets when the state changed (the first reading is news to nobody: each socket got it on auth). */
  private setState(channel: ServerChannel, state: ServerState): void {
    if (channel.state === state) return;
    // A fresh start is a clean slate for the throttle, as in Wings.
    if (state === 'starting') channel.throttle?.reset();
    const known = channel.state !== null;
    channel.state = state;
    if (known) channel.broadcast(OUTBOUND.status, [state]);
  }

  /**
   * The server's state (also one another instance changed, which sends us no
   * event) and, unless it is offline, its figures as a `stats` frame. One
   * sample of a server at a time.
   */
  private async sample(channel: ServerChannel): Promise<void> {
    if (channel.sampling) return;
    channel.sampling = true;
    try {
      const target = daemonServer(channel.server);
      this.setState(channel, await this.deps.daemon.state(target));
      if (channel.state === 'offline' || channel.sessions.size === 0) return;
      const resources = await this.deps.daemon.resources(target);
      if (this.channels.get(channel.server.uuid) !== channel) return;
      channel.broadcast(OUTBOUND.stats, [statsPayload(resources, channel.server)]);
    } catch (err) {
      this.log.warn({ err, serverUuid: channel.server.uuid }, "could not read a server's figures for its websocket");
    } finally {
      channel.sampling = false;
    }
  }

  /**
   * The rows of every server with sockets, in one statement: a deleted server
   * closes its sockets, a suspended one too (also when the admin command line
   * suspended it from another process); then, once in a while or when an
   * owner changed, every socket's user and rights.
   */
  private async poll(): Promise<void> {
    if (this.polling || this.channels.size === 0) return;
    this.polling = true;
    try {
      const channels = [...this.channels.values()];
      const rows = await findServersByUuids(
        this.deps.db,
        channels.map((c) => c.server.uuid),
      );
      const byUuid = new Map(rows.map((row) => [row.uuid, row]));
      let ownerChanged = false;
      for (const channel of channels) {
        if (this.channels.get(channel.server.uuid) !== channel) continue;
        const row = byUuid.get(channel.server.uuid);
        if (!row) {
          for (const session of [...channel.sessions]) session.close(CLOSE.serverDeleted, 'server deleted');
          continue;
        }
        if (row.status === 'suspended') {
          for (const session of [...channel.sessions]) session.suspended();
          continue;
        }
        if (row.owner_id !== channel.server.owner_id) ownerChanged = true;
        channel.server = row;
        for (const session of channel.sessions) session.serverChanged(row);
      }
      if (ownerChanged || this.accessCheckDue()) await this.recheckAccess();
    } catch (err) {
      this.log.warn({ err }, 'could not poll the servers that have websockets');
    } finally {
      this.polling = false;
    }
  }

  private accessCheckDue(): boolean {
    const { real, clock } = this.lastAccessCheck;
    const every = this.options.accessCheckMs;
    return performance.now() - real >= every || this.deps.clock.now() - clock >= every;
  }

  private async recheckAccess(): Promise<void> {
    this.lastAccessCheck = { real: performance.now(), clock: this.deps.clock.now() };
    const entries: { session: SocketSession; server: ServerRow; userId: number }[] = [];
    for (const channel of this.channels.values()) {
      for (const session of channel.sessions) {
        if (session.userId !== null) entries.push({ session, server: channel.server, userId: session.userId });
      }
    }
    if (entries.length === 0) return;
    const access = await recheckSocketAccess(this.deps.db, entries);
    for (const { session, server, userId } of entries) session.accessChanged(access.get(`${server.id}:${userId}`) ?? null);
  }

  private serverEvent(event: ServerEvent): void {
    const channel = this.channels.get(event.serverUuid);
    if (!channel) return;
    switch (event.type) {
      case 'backup-completed':
        // Wings names the backup in the event, and tells only sockets that may read backups.
        channel.broadcast(`${OUTBOUND.backupCompleted}:${event.backupUuid}`, [backupCompletedPayload(event)], 'backup.read');
        return;
      case 'restore-completed':
        channel.broadcast(OUTBOUND.daemonMessage, [
          event.successful ? 'Completed server restoration from local backup.' : 'Server restoration from local backup failed.',
        ]);
        channel.broadcast(OUTBOUND.backupRestoreCompleted, ['']);
        return;
      case 'install-started':
        this.statusChanged(channel, 'installing');
        channel.broadcast(OUTBOUND.installStarted, ['']);
        return;
      case 'install-output':
        for (const session of channel.sessions) session.deliverInstallOutput(event.line);
        return;
      case 'install-completed':
        this.statusChanged(channel, event.successful ? null : 'install_failed');
        channel.broadcast(OUTBOUND.installCompleted, ['']);
        return;
    }
  }

  /** The status an install set, known before the next poll reads it (`send logs` answers by it). */
  private statusChanged(channel: ServerChannel, status: ServerRow['status']): void {
    channel.server = { ...channel.server, status };
    for (const session of channel.sessions) session.serverChanged(channel.server);
  }
}
