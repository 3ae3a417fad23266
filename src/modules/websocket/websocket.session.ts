import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { WebSocket, type RawData } from 'ws';
import type { ServerRow } from '../../db/schema.js';
import type { Access, Permission } from '../../http/permissions.js';
import { refusalOf } from '../servers/access-policy.js';
import { daemonServer } from '../servers/servers.service.js';
import {
  CLOSE,
  closeReason,
  encodeFrame,
  FrameLimiter,
  HISTORY_LINES,
  INBOUND,
  JWT_ERRORS,
  OUTBOUND,
  parseFrame,
  SEND_BUFFER_LIMIT,
  type Frame,
  type RateDecision,
} from './websocket.frames.js';
import {
  findCurrentSocketAccess,
  SOCKET_ACCESS,
  socketConsoleCommand,
  socketMay,
  socketPowerAction,
  type SocketActionOutcome,
  type WebsocketDeps,
} from './websocket.service.js';
import { JwtError, tokenGrants, verifyWebsocketToken } from './websocket.tokens.js';
import { statsPayload } from './websocket.transformer.js';

/** An unauthenticated socket must send `auth` within this (real time). */
const AUTH_TIMEOUT_MS = 30_000;
/** `token expiring` this long before the token's exp (Wings: 60 s). */
const EXPIRING_NOTICE_MS = 60_000;
/** After `token expired`, how long the socket waits for a renewing `auth` before it closes. */
const RENEWAL_GRACE_MS = 30_000;
/** A closed socket's connection is destroyed after this, whether or not the client answered the close frame. */
const CLOSE_GRACE_MS = 1_000;
/** Frames waiting to be handled, one at a time, in order. */
const MAX_QUEUED_FRAMES = 32;
const UNEXPECTED = 'an unexpected error was encountered while handling this request';

/** What a socket needs from the hub that holds it (websocket.hub.ts). */
export interface SessionHost {
  readonly deps: WebsocketDeps;
  readonly log: FastifyBaseLogger;
  /** Adds an authenticated socket to its server's fan-out; false when its user has too many sockets there. */
  join(session: SocketSession): boolean;
  /** The socket is closed: drop it from wherever it is. */
  forget(session: SocketSession): void;
}

interface Identity {
  userId: number;
  userUuid: string;
  tokenPermissions: readonly string[];
  /** The token's exp, in the injected clock's milliseconds. */
  expiresAt: number;
  warned: boolean;
}

type SessionState = 'pending' | 'active' | 'expired' | 'closed';

/**
 * One client's socket (docs/reference/power-and-console.md#websocket), speaking Wings' protocol: authenticated by
 * its `auth` frame (and renewed by the next), then it hears its server's
 * console, status and stats from the hub and may send commands and power
 * actions, each checked against the user's rights as stored now and logged
 * as the HTTP routes log them. Frames are handled one at a time, in order.
 */
export class SocketSession {
  private state: SessionState = 'pending';
  private identity: Identity | null = null;
  private access: Access | null = null;
  private row: ServerRow | null = null;
  private readonly openedAt = performance.now();
  private expiredAt = 0;
  private readonly limiter = new FrameLimiter(() => performance.now());
  private queue: Promise<void> = Promise.resolve();
  private queued = 0;

  constructor(
    private readonly ws: WebSocket,
    readonly serverUuid: string,
    private readonly ip: string,
    private readonly host: SessionHost,
  ) {
    ws.on('message', (data) => this.receive(data));
    ws.on('close', () => this.closedByPeer());
  }

  /** Authenticated (its token valid, or expired and awaiting renewal): what the hub fans out to. */
  get joined(): boolean {
    return this.state === 'active' || this.state === 'expired';
  }

  get userId(): number | null {
    return this.identity?.userId ?? null;
  }

  get server(): ServerRow | null {
    return this.row;
  }

  /** A server event for this client: sent only while its token is valid, and only with `permission` when one is named. */
  deliver(event: string, args?: readonly string[], permission?: Permission): void {
    if (this.state !== 'active') return;
    if (permission && !this.may(permission)) return;
    this.send(event, args);
  }

  /**
   * An install's output line (docs/reference/eggs-and-installs.md): to the server's owner and root admins
   * only, as Wings sends it only to tokens with `admin.websocket.install`
   * (docs/INSTALLS.md: scripts may print secrets; subusers do not see them).
   */
  deliverInstallOutput(line: string): void {
    if (this.state !== 'active' || this.access?.isOwnerOrAdmin !== true) return;
    this.send(OUTBOUND.installOutput, [line]);
  }

  /** Called every second by the hub: the auth deadline, the token's expiry (on the injected clock), the renewal grace. */
  tick(now: number, realNow: number): void {
    switch (this.state) {
      case 'pending':
        if (realNow - this.openedAt >= AUTH_TIMEOUT_MS) this.close(CLOSE.authTimeout, 'no auth frame in time');
        return;
      case 'active': {
        const identity = this.identity!;
        const left = identity.expiresAt - now;
        if (left <= 0) {
          this.state = 'expired';
          this.expiredAt = realNow;
          this.send(OUTBOUND.tokenExpired);
        } else if (left <= EXPIRING_NOTICE_MS && !identity.warned) {
          identity.warned = true;
          this.send(OUTBOUND.tokenExpiring);
        }
        return;
      }
      case 'expired':
        if (realNow - this.expiredAt >= RENEWAL_GRACE_MS) this.fail(JWT_ERRORS.expired);
        return;
      case 'closed':
        return;
    }
  }

  /** The server's row as the hub last read it. */
  serverChanged(row: ServerRow): void {
    this.row = row;
  }

  /** The user's rights as the hub's periodic check read them; null: they can no longer see the server. */
  accessChanged(access: Access | null): void {
    if (!this.joined || !this.identity) return;
    if (access === null || !socketMay(this.identity.tokenPermissions, access, 'websocket.connect')) {
      this.revoke();
      return;
    }
    this.access = access;
  }

  close(code: number, reason: string): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.host.forget(this);
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING)
      this.ws.close(code, closeReason(reason));
    // A client that does not read never sees the close frame: its connection, and what waits to be sent on it, go now.
    const timer = setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS);
    timer.unref();
    this.ws.once('close', () => clearTimeout(timer));
  }

  private closedByPeer(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.host.forget(this);
  }

  private may(permission: Permission): boolean {
    return this.identity !== null && this.access !== null && socketMay(this.identity.tokenPermissions, this.access, permission);
  }

  /**
   * Sends unless the client has stopped reading: past SEND_BUFFER_LIMIT
   * waiting (ours and the socket's), it is dropped, so that one slow client
   * costs the service at most that much memory.
   */
  private send(event: string, args?: readonly string[]): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    if (this.ws.bufferedAmount > SEND_BUFFER_LIMIT) {
      this.host.log.info({ serverUuid: this.serverUuid, buffered: this.ws.bufferedAmount }, 'websocket client too slow; dropped');
      this.close(CLOSE.tooSlow, 'too slow: over 1 MiB waiting to be sent');
      return;
    }
    this.ws.send(encodeFrame(event, args));
  }

  private receive(data: RawData): void {
    if (this.state === 'closed') return;
    const admitted = this.limiter.admitRaw();
    if (admitted !== 'allow') return this.refuse(admitted);
    const frame = parseFrame(data);
    if (!frame) return;
    const decision = this.limiter.admitEvent(frame.event);
    if (decision !== 'allow') return this.refuse(decision);
    if (this.queued >= MAX_QUEUED_FRAMES) return this.refuse({ throttled: frame.event, notify: true });
    this.queued += 1;
    this.queue = this.queue
      .then(() => this.handle(frame))
      .catch((err: unknown) => this.unexpected(frame.event, err))
      .finally(() => {
        this.queued -= 1;
      });
  }

  private refuse(decision: Exclude<RateDecision, 'allow'>): void {
    if (decision === 'abuse') {
      this.close(CLOSE.tooManyFrames, 'too many messages');
      return;
    }
    if (decision.notify) this.send(OUTBOUND.throttled, [decision.throttled]);
  }

  private async handle(frame: Frame): Promise<void> {
    if (this.state === 'closed') return;
    const argument = frame.args.join('');
    if (frame.event === INBOUND.auth) return this.authenticate(argument);
    if (this.state === 'pending') return this.send(OUTBOUND.jwtError, [JWT_ERRORS.absent]);
    if (this.state === 'expired') return this.send(OUTBOUND.jwtError, [JWT_ERRORS.expired]);
    switch (frame.event) {
      case INBOUND.sendCommand:
        return this.settle(await socketConsoleCommand(this.host.deps, this.actor(), argument));
      case INBOUND.setState:
        return this.settle(await socketPowerAction(this.host.deps, this.actor(), argument));
      case INBOUND.sendLogs:
        return this.sendLogs();
      case INBOUND.sendStats:
        return this.sendStats();
      default:
        // Wings ignores events it does not know.
        return;
    }
  }

  private async authenticate(token: string): Promise<void> {
    const { deps } = this.host;
    let claims;
    try {
      claims = await verifyWebsocketToken(deps.appKey, token, { issuer: deps.config.appUrl, now: deps.clock.now() });
    } catch (err) {
      if (err instanceof JwtError) return this.fail(err.message);
      throw err;
    }
    if (claims.serverUuid !== this.serverUuid) return this.fail(JWT_ERRORS.serverMismatch);
    if (this.identity && claims.userUuid !== this.identity.userUuid) return this.fail(JWT_ERRORS.otherUser);
    if (!tokenGrants(claims.permissions, 'websocket.connect')) return this.fail(JWT_ERRORS.noConnect);
    const found = await findCurrentSocketAccess(deps.db, this.serverUuid, claims.userUuid);
    if (this.state === 'closed') return;
    if (!found) return this.revoke();
    // The one access policy: websocket.connect (the token's, narrowed by the user's rights now), and a server not suspended.
    const refusal = refusalOf(found.access, found.server, SOCKET_ACCESS, (p) => socketMay(claims.permissions, found.access, p));
    if (refusal?.kind === 'forbidden') return this.fail(JWT_ERRORS.noConnect);
    if (refusal?.kind === 'conflict') return this.suspended();

    const before = this.state;
    this.identity = {
      userId: found.user.id,
      userUuid: claims.userUuid,
      tokenPermissions: claims.permissions,
      expiresAt: claims.expiresAt,
      warned: false,
    };
    this.access = found.access;
    this.row = found.server;
    this.state = 'active';
    this.send(OUTBOUND.authSuccess);
    // A renewal says no more (Pterodactyl panel issue 2077), unless the socket missed changes while expired.
    if (before === 'expired') {
      await this.sendStatus(found.server);
      return;
    }
    if (before !== 'pending') return;
    if (!this.host.join(this)) return this.close(CLOSE.tooManySockets, 'too many connections to this server');
    const state = await this.sendStatus(found.server);
    // Wings sends one `stats` on connecting to a stopped server (a running one sends them every 2 s anyway).
    if (state === 'offline') await this.sendStats();
  }

  private async sendStatus(server: ServerRow) {
    const state = await this.host.deps.daemon.state(daemonServer(server));
    this.deliver(OUTBOUND.status, [state]);
    return state;
  }

  private async sendLogs(): Promise<void> {
    if (!this.row) return;
    if (this.row.status === 'installing') {
      // While it installs, the server's log is the install's (docs/reference/eggs-and-installs.md).
      for (const line of await this.host.deps.daemon.installLog(daemonServer(this.row), HISTORY_LINES))
        this.deliverInstallOutput(line);
      return;
    }
    const lines = await this.host.deps.daemon.consoleHistory(daemonServer(this.row), HISTORY_LINES);
    for (const line of lines) this.deliver(OUTBOUND.consoleOutput, [line]);
  }

  private async sendStats(): Promise<void> {
    const row = this.row;
    if (!row) return;
    const resources = await this.host.deps.daemon.resources(daemonServer(row));
    this.deliver(OUTBOUND.stats, [statsPayload(resources, row)]);
  }

  private actor() {
    const identity = this.identity!;
    return { serverUuid: this.serverUuid, userUuid: identity.userUuid, tokenPermissions: identity.tokenPermissions, ip: this.ip };
  }

  private settle(outcome: SocketActionOutcome): void {
    if (outcome.ok) return;
    switch (outcome.reason) {
      case 'revoked':
        return this.revoke();
      case 'suspended':
        return this.suspended();
      case 'refused':
        return this.send(OUTBOUND.daemonError, [outcome.message]);
    }
  }

  /** A token refused: said in Wings' words, then the socket closes (the client reconnects with a new token). */
  private fail(reason: string): void {
    this.send(OUTBOUND.jwtError, [reason]);
    this.close(CLOSE.authFailed, reason);
  }

  /** The user can no longer see the server or use its socket (docs/reference/power-and-console.md#websocket: a removed subuser, a lost permission). */
  private revoke(): void {
    this.send(OUTBOUND.jwtError, [JWT_ERRORS.revoked]);
    this.close(CLOSE.accessRevoked, 'access to this server was revoked');
  }

  suspended(): void {
    const message = 'This server is currently suspended and the functionality requested is unavailable.';
    this.send(OUTBOUND.daemonError, [message]);
    this.close(CLOSE.suspended, 'server suspended');
  }

  /** A bug, not a refusal: the client gets Wings' generic sentence with an id the log has too. */
  private unexpected(event: string, err: unknown): void {
    const id = randomUUID();
    this.host.log.error({ err, event, serverUuid: this.serverUuid, errorId: id }, 'websocket frame failed');
    this.send(OUTBOUND.daemonError, [`Error Event [${id}]: ${UNEXPECTED}`]);
  }
}
