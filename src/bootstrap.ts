import fs from 'node:fs';
import path from 'node:path';
import type { Clock } from './clock.js';
import type { Daemon } from './daemon/daemon.js';
import type { Database, DialectName } from './db/database.js';
import { assignInitialAllocation } from './modules/allocations/allocations.service.js';
import { createApiKey } from './modules/keys/keys.service.js';
import { createServer } from './modules/servers/servers.service.js';
import { createUser, hasUsers, lockForBootstrap } from './modules/users/users.repository.js';

/**
 * First start (docs/reference/configuration.md): against a database with no users, create the root
 * admin, a server to try things on and a client API key, so that a fresh
 * `npm start` can be used at once.
 */
export const BOOTSTRAP_USERNAME = 'admin';
export const BOOTSTRAP_EMAIL = 'admin@localhost';
export const BOOTSTRAP_SERVER_NAME = 'demo';
export const INITIAL_KEY_FILE = 'initial-api-key';

/**
 * What the `demo` server runs (docs/reference/eggs-and-installs.md: it starts and shows output): a POSIX
 * shell loop on the machine's own system (the `host` image), confined or not.
 * It greets, echoes each console command, and ends on its stop command.
 * Change it with `server:update --server demo --startup ...`.
 */
export const DEMO_STARTUP =
  'echo "Quetzal demo server started (memory limit: ${SERVER_MEMORY:-none} MiB). Type a command below; stop ends it.";' +
  ' while read -r line; do [ "$line" = stop ] && echo "Stopping." && exit 0; echo "demo> $line"; done;' +
  ' while :; do sleep 3600; done';
export const DEMO_STOP_COMMAND = 'stop';

export interface BootstrapDeps {
  db: Database;
  dialect: DialectName;
  daemon: Daemon;
  clock: Clock;
}

export interface InitialCredentials {
  username: string;
  email: string;
  serverIdentifier: string;
  token: string;
}

/**
 * Creates the first admin, server and key when the database has no users at all;
 * returns null (and changes nothing) otherwise. Safe when several instances
 * start together: the check and the inserts share a transaction that holds the
 * database's write lock (SQLite) or an advisory lock (PostgreSQL) from its start.
 */
export async function bootstrapFirstStart(deps: BootstrapDeps): Promise<InitialCredentials | null> {
  if (await hasUsers(deps.db)) return null;
  try {
    return await deps.db.transaction().execute(async (trx) => {
      await lockForBootstrap(trx, deps.dialect);
      if (await hasUsers(trx)) return null;
      const now = deps.clock.now();
      const user = await createUser(trx, { username: BOOTSTRAP_USERNAME, email: BOOTSTRAP_EMAIL, rootAdmin: true, now });
      const server = await createServer(trx, deps.daemon, {
        ownerId: user.id,
        name: BOOTSTRAP_SERVER_NAME,
        startup: DEMO_STARTUP,
        stopCommand: DEMO_STOP_COMMAND,
        now,
      });
      // Only when the admin added allocations before the first start (none by default, docs/reference/network-and-allocations.md).
      await assignInitialAllocation(trx, server, { kind: 'auto' }, now);
      const { token } = await createApiKey(trx, {
        userId: user.id,
        description: 'Initial key (created on first start)',
        allowedIps: [],
        now,
      });
      return { username: user.username, email: user.email, serverIdentifier: server.uuid_short, token };
    });
  } catch (err) {
    // Whatever the locks, a competing first start that won is not a failure of ours.
    if (await hasUsers(deps.db)) return null;
    throw err;
  }
}

/** Writes `$DATA_DIR/initial-api-key` (the token and a newline), readable by this user only. */
export function writeInitialKeyFile(dataDir: string, token: string): string {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, INITIAL_KEY_FILE);
  const fd = fs.openSync(file, 'w', 0o600);
  try {
    // The mode above applies only when the file is new.
    fs.fchmodSync(fd, 0o600);
    fs.writeSync(fd, `${token}\n`);
  } finally {
    fs.closeSync(fd);
  }
  return file;
}

/**
 * The one time the key is shown. Written straight to standard output, not
 * through the logger, so that no log level hides it.
 */
export function initialKeyAnnouncement(
  credentials: InitialCredentials,
  url: string,
  keyFile: string,
  /** The environment the admin command needs (src/cli/admin-env.ts), e.g. `DATA_DIR=/srv/q `. */
  commandEnv = '',
): string {
  return [
    '',
    `Quetzal first start: created the root admin "${credentials.username}" (${credentials.email}),`,
    `the server "${BOOTSTRAP_SERVER_NAME}" (${credentials.serverIdentifier}) and a client API key:`,
    '',
    `    ${credentials.token}`,
    '',
    `It is shown only this once; it is also in ${keyFile}. Try it:`,
    '',
    `    curl -H "Authorization: Bearer ${credentials.token}" -H "Accept: application/json" ${url}/api/client`,
    '',
    `To use the web console at ${url}/, give "${credentials.username}" a password first (one line on standard input):`,
    '',
    `    ${commandEnv}npx quetzal user:password --user ${credentials.username}`,
    '',
    '',
  ].join('\n');
}
