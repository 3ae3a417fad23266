/**
 * The service alone in its process, for bench/file-routes.ts: the real app
 * (SQLite, the local daemon) listening on a free loopback port, one user with
 * an API key and one server. Prints one JSON line (`base`, `token`, `server`,
 * `volume`) when it listens, and closes on SIGTERM. The clients (curl) run in
 * processes of their own, like a user's.
 *
 *   DATA_DIR=<dir> UPLOAD_LIMIT_MB=<n> node --import tsx bench/files-lib/route-server.ts
 */
import path from 'node:path';
import { buildApp } from '../../src/app.js';
import { BackgroundJobs } from '../../src/background.js';
import { loadConfig } from '../../src/config.js';
import { LocalDaemon } from '../../src/daemon/local/local-daemon.js';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createApiKey } from '../../src/modules/keys/keys.service.js';
import { createServer } from '../../src/modules/servers/servers.service.js';
import { createUser } from '../../src/modules/users/users.repository.js';

const dataDir = process.env.DATA_DIR ?? '';
if (!dataDir) throw new Error('DATA_DIR is required');
const url = `sqlite:${path.join(dataDir, 'db.sqlite')}`;
const handle = openDatabase(url);
await migrateToLatest(handle);
const config = loadConfig({
  DATA_DIR: dataDir,
  DATABASE_URL: url,
  LOG_LEVEL: 'silent',
  UPLOAD_LIMIT_MB: process.env.UPLOAD_LIMIT_MB ?? '1100',
  RATE_LIMIT_PER_MINUTE: '100000',
});
const daemon = new LocalDaemon(dataDir, { stopGraceMs: 500 });
await daemon.start();
const jobs = new BackgroundJobs({ error: () => {} });
const now = Date.now();
const owner = await createUser(handle.db, { username: 'bench', email: 'bench@example.test', rootAdmin: false, now });
const { token } = await createApiKey(handle.db, { userId: owner.id, description: 'bench', allowedIps: [], now });
const server = await createServer(handle.db, daemon, { ownerId: owner.id, name: 'bench', now });
const app = await buildApp(
  { db: handle.db, dialect: handle.dialect, config, clock: { now: () => Date.now() }, daemon, jobs },
  { logger: false },
);
const base = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${JSON.stringify({ base, token, server: server.uuid_short, volume: daemon.volumeDir(server.uuid) })}\n`);

process.on('SIGTERM', () => {
  void (async () => {
    await app.close();
    await jobs.idle();
    await daemon.close();
    await handle.close();
    process.exit(0);
  })();
});
