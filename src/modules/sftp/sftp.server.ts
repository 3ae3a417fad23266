/**
 * The SFTP server (docs/reference/files-and-sftp.md, docs/SFTP.md): OpenSSH-compatible SSH on
 * SFTP_HOST:SFTP_PORT with the `ssh2` package, the `sftp` subsystem only (no
 * shell, exec or forwarding). Sign-in is `<username>.<server identifier>`
 * with the panel password (sftp.sign-in.ts); each channel's requests are
 * served by sftp.session.ts through `deps.daemon.files`.
 *
 * Every RECHECK_MS each connection's access is read again (the user, their
 * password hash, `file.sftp` on the server, the server's status): a
 * connection whose user lost it (subuser removed, permission revoked,
 * password changed, account deleted, server suspended) is closed, well within
 * the 30 s docs/reference/accounts.md allows.
 */
import type { AddressInfo } from 'node:net';
import ssh2, { type Connection } from 'ssh2';
import type { Actor } from '../../actor.js';
import type { AppDeps } from '../../deps.js';
import type { ServerRow } from '../../db/schema.js';
import { unmapped } from '../../http/client-address.js';
import type { Access } from '../../http/permissions.js';
import { SftpActivity } from './sftp.activity.js';
import { loadHostKey } from './sftp.host-key.js';
import { SftpSession } from './sftp.session.js';
import { recheckSftpAccess, signInToSftp, type SftpIdentity } from './sftp.sign-in.js';

export const RECHECK_MS = 5_000;
/** A connection that has not signed in by then is closed (OpenSSH's LoginGraceTime is 120 s; a client types faster). */
const SIGN_IN_GRACE_MS = 60_000;

export type SftpDeps = Pick<AppDeps, 'db' | 'clock' | 'daemon' | 'config'>;

export interface SftpLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface RunningSftpServer {
  /** The address bound (SFTP_HOST) and the port (the real one when SFTP_PORT=0). */
  readonly host: string;
  readonly port: number;
  /** The host key's `SHA256:` fingerprint, as clients show it. */
  readonly fingerprint: string;
  /** Stops accepting and closes every connection (open files are closed, pending activity written). */
  stop(): Promise<void>;
}

/** One signed-in connection. */
interface LiveConnection {
  client: Connection;
  identity: SftpIdentity;
  sessions: Set<SftpSession>;
  closing: boolean;
}

export async function startSftpServer(
  deps: SftpDeps,
  logger: SftpLogger,
  options: { host: string; port: number; recheckMs?: number },
): Promise<RunningSftpServer> {
  const key = loadHostKey(deps.config.dataDir);
  const live = new Set<LiveConnection>();
  const sockets = new Set<Connection>();
  const onError = (err: unknown) => logger.error({ err }, 'sftp: an operation failed unexpectedly');

  const close = (connection: LiveConnection, why: string) => {
    if (connection.closing) return;
    connection.closing = true;
    logger.info(
      { user: connection.identity.user.username, server: connection.identity.server.uuid_short, why },
      'sftp session closed',
    );
    // A disconnect message, then the socket is ended; its open files are closed on 'close'.
    connection.client.end();
  };

  const server = new ssh2.Server({ hostKeys: [key.privateKey], ident: 'Quetzal' }, (client, info) => {
    sockets.add(client);
    const ip = unmapped(info.ip);
    let identity: SftpIdentity | undefined;
    let connection: LiveConnection | undefined;
    const grace = setTimeout(() => {
      if (!identity) client.end();
    }, SIGN_IN_GRACE_MS);
    grace.unref();

    client.on('authentication', (ctx) => {
      const methods: ssh2.AuthenticationType[] = ['publickey', 'password'];
      let attempt;
      if (ctx.method === 'password') attempt = signInToSftp(deps, { login: ctx.username, password: ctx.password, ip });
      else if (ctx.method === 'publickey') {
        const key = { algo: ctx.key.algo, data: ctx.key.data, signature: ctx.signature, blob: ctx.blob, hashAlgo: ctx.hashAlgo };
        attempt = signInToSftp(deps, { login: ctx.username, key, ip });
      } else return ctx.reject(methods);
      attempt
        .then((result) => {
          if (result.ok) {
            identity = result.identity;
            return ctx.accept();
          }
          // A key offered without a signature: it would do, so the client may now sign with it.
          if (result.reason === 'key-acceptable') return ctx.accept();
          if (result.reason !== 'credentials') logger.warn({ ip, login: ctx.username, refused: result }, 'sftp sign-in refused');
          ctx.reject(methods);
        })
        .catch((err: unknown) => {
          onError(err);
          ctx.reject(methods);
        });
    });

    client.on('ready', () => {
      clearTimeout(grace);
      if (!identity) return client.end();
      const current = (connection = { client, identity, sessions: new Set<SftpSession>(), closing: false });
      live.add(current);
      const actor: Actor = { userId: identity.user.id, apiKeyId: null, ip };
      client.on('session', (accept) => {
        const session = accept();
        session.on('sftp', (acceptSftp) => {
          const sftp = acceptSftp();
          const activity = new SftpActivity({ db: deps.db, clock: deps.clock, onError }, current.identity.server.id, actor);
          const channel = new SftpSession(sftp, {
            deps,
            server: () => current.identity.server,
            access: () => current.identity.access,
            activity,
            onError,
          });
          current.sessions.add(channel);
          sftp.on('close', () => current.sessions.delete(channel));
        });
        // SFTP only: no shell, command or terminal.
        for (const refused of ['shell', 'exec', 'pty', 'subsystem', 'env', 'x11', 'signal', 'auth-agent'] as const) {
          session.on(refused, (_accept: unknown, reject?: () => void) => reject?.());
        }
      });
      // No forwarding of any kind.
      client.on('tcpip', (_accept, reject) => reject());
      client.on('request', (_accept, reject) => reject?.());
    });

    client.on('close', () => {
      clearTimeout(grace);
      sockets.delete(client);
      if (!connection) return;
      live.delete(connection);
      for (const channel of connection.sessions) void channel.end().catch(onError);
    });
    client.on('error', (err) => logger.info({ err: err.message, ip }, 'sftp connection error'));
  });

  const recheck = async () => {
    for (const connection of [...live]) {
      if (connection.closing) continue;
      try {
        const current = await recheckSftpAccess(deps.db, connection.identity);
        if (current === null) close(connection, 'access lost');
        else updateIdentity(connection.identity, current.server, current.access);
      } catch (err) {
        onError(err);
      }
    }
  };
  let rechecking = false;
  const timer = setInterval(() => {
    if (rechecking) return;
    rechecking = true;
    void recheck().finally(() => (rechecking = false));
  }, options.recheckMs ?? RECHECK_MS);
  timer.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err: Error) => logger.error({ err }, 'sftp server error'));
  const address = server.address() as AddressInfo;
  logger.info({ host: options.host, port: address.port, fingerprint: key.fingerprint }, 'sftp is listening');

  let stopped: Promise<void> | undefined;
  return {
    host: options.host,
    port: address.port,
    fingerprint: key.fingerprint,
    stop() {
      stopped ??= (async () => {
        clearInterval(timer);
        const closedServer = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const connection of live) close(connection, 'service stopping');
        for (const client of sockets) if (![...live].some((c) => c.client === client)) client.end();
        await Promise.all(
          [...live].flatMap((connection) => [...connection.sessions].map((channel) => channel.end().catch(onError))),
        );
        await closedServer;
      })();
      return stopped;
    },
  };
}

function updateIdentity(identity: SftpIdentity, server: ServerRow, access: Access): void {
  identity.server = server;
  identity.access = access;
}
