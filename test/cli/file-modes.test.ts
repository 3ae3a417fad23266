import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createSandbox, getJson, quetzal, quetzalJson, startService, type ServiceProcess } from './helpers.js';
import { TEST_DATABASE_URL } from '../helpers/databases.js';

/**
 * docs/reference/containment.md: the service's own files are readable by its user only. DATA_DIR
 * 0700, the SQLite database and every side file 0600, `initial-api-key`,
 * backups and console logs 0600; whichever command (serve, worker, an admin
 * command) opens DATA_DIR first, and at every start for files left looser.
 */

const SPAWN_TIMEOUT_MS = 120_000;

const modeOf = (file: string) => (fs.statSync(file).mode & 0o777).toString(8);

/** Every mode under `dir` that is not `expected`, as `relative path: mode`. */
function modesOtherThan(dir: string, names: string[], expected: string): string[] {
  return names
    .filter((name) => modeOf(path.join(dir, name)) !== expected)
    .map((name) => `${name}: ${modeOf(path.join(dir, name))}`);
}

const folders: string[] = [];
const services: ServiceProcess[] = [];

/** A folder to hold a DATA_DIR that does not exist yet (the command creates it). */
function scratch(): string {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-modes-'));
  folders.push(folder);
  return folder;
}

async function serve(env: Record<string, string>): Promise<ServiceProcess> {
  const service = await startService('serve', env);
  services.push(service);
  return service;
}

afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.stop('SIGTERM')));
  for (const folder of folders.splice(0)) fs.rmSync(folder, { recursive: true, force: true });
});

/** The modes-tightened log line (info level), if the command wrote one. */
function tightenedLine(output: string): { modeChanges: { path: string; from: string; to: string }[] } | undefined {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg?: string; modeChanges: { path: string; from: string; to: string }[] })
    .find((entry) => entry.msg?.startsWith('tightened the modes'));
}

describe('the service keeps its own files private (docs/reference/containment.md) [sqlite]', () => {
  it(
    'creates DATA_DIR 0700 and the database, its side files and lock 0600, from migrate, and from serve with its first start',
    async () => {
      const dataDir = path.join(scratch(), 'data');
      // DATABASE_URL unset: the default, sqlite:$DATA_DIR/quetzal.sqlite.
      const env = { DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
      expect(await quetzalJson(['migrate'], env)).toEqual({ migrated: true });
      expect(modeOf(dataDir)).toBe('700');
      const created = fs.readdirSync(dataDir).filter((name) => name.startsWith('quetzal.sqlite'));
      expect(created).toEqual(expect.arrayContaining(['quetzal.sqlite', 'quetzal.sqlite.migrate-lock']));
      expect(modesOtherThan(dataDir, created, '600')).toEqual([]);

      // A second, fresh DATA_DIR whose first command is `serve` (with the first-start bootstrap).
      const servedDir = path.join(scratch(), 'data');
      const service = await serve({ DATA_DIR: servedDir, LOG_LEVEL: 'warn' });
      const token = fs.readFileSync(path.join(servedDir, 'initial-api-key'), 'utf8').trim();
      expect(modeOf(servedDir)).toBe('700');
      // While the service runs, SQLite's WAL files exist: created with the database's mode.
      const files = fs.readdirSync(servedDir).filter((name) => name.startsWith('quetzal.sqlite') || name === 'initial-api-key');
      expect(files).toEqual(
        expect.arrayContaining(['quetzal.sqlite', 'quetzal.sqlite-wal', 'quetzal.sqlite-shm', 'initial-api-key']),
      );
      expect(modesOtherThan(servedDir, files, '600')).toEqual([]);
      expect(modesOtherThan(servedDir, ['volumes', 'backups', 'logs', 'run'], '700')).toEqual([]);
      // No log line: nothing was looser than it should be.
      expect(tightenedLine(service.stdout())).toBeUndefined();

      // A backup and a server's console log, made while the service runs.
      const env2 = { DATA_DIR: servedDir, LOG_LEVEL: 'warn' };
      const server = await quetzalJson(
        ['server:create', '--owner', 'admin', '--name', 'chatty', '--startup', 'echo hello; sleep 60'],
        env2,
      );
      await quetzalJson(['backup:create', '--server', server.identifier as string], env2);
      const power = await fetch(`${service.url}/api/client/servers/${server.identifier}/power`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'content-type': 'application/json' },
        body: JSON.stringify({ signal: 'start' }),
      });
      expect(power.status).toBe(204);
      const log = path.join(servedDir, 'logs', `${server.uuid}.log`);
      const said = () => fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes('hello');
      for (let i = 0; i < 100 && !said(); i++) await sleep(100);
      expect(said()).toBe(true);
      expect(modeOf(log)).toBe('600');
      const backups = fs.readdirSync(path.join(servedDir, 'backups'));
      expect(backups).toHaveLength(1);
      expect(modesOtherThan(path.join(servedDir, 'backups'), backups, '600')).toEqual([]);
      expect((await getJson(`${service.url}/api/client`, token)).status).toBe(200);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'tightens a DATA_DIR left 0755 and a database, side files, lock and console log left 0644 at the next start, logging it once',
    async () => {
      const dataDir = path.join(scratch(), 'data');
      const env = { DATA_DIR: dataDir, LOG_LEVEL: 'info' };
      await quetzalJson(['user:create', '--username', 'alice', '--email', 'alice@example.com'], env);
      const loosen = () => {
        fs.chmodSync(dataDir, 0o755);
        fs.chmodSync(path.join(dataDir, 'quetzal.sqlite'), 0o644);
        fs.chmodSync(path.join(dataDir, 'quetzal.sqlite.migrate-lock'), 0o644);
        // What an older version (or a crash) may leave beside the database.
        fs.writeFileSync(path.join(dataDir, 'quetzal.sqlite-journal'), '', { mode: 0o644 });
        fs.chmodSync(path.join(dataDir, 'quetzal.sqlite-journal'), 0o644);
      };
      const expectTight = () => {
        expect(modeOf(dataDir)).toBe('700');
        expect(modesOtherThan(dataDir, ['quetzal.sqlite', 'quetzal.sqlite.migrate-lock'], '600')).toEqual([]);
      };

      // An admin command tightens them (its logs go to standard error).
      loosen();
      const migrate = await quetzal(['migrate', '--json'], env);
      expect(migrate.code).toBe(0);
      expectTight();
      const logged = tightenedLine(migrate.stderr);
      expect(logged?.modeChanges).toEqual(
        expect.arrayContaining([
          { path: dataDir, from: '755', to: '700' },
          { path: path.join(dataDir, 'quetzal.sqlite'), from: '644', to: '600' },
          { path: path.join(dataDir, 'quetzal.sqlite.migrate-lock'), from: '644', to: '600' },
        ]),
      );
      expect(migrate.stderr.split('\n').filter((line) => line.includes('tightened the modes'))).toHaveLength(1);
      expect(modeOf(path.join(dataDir, 'quetzal.sqlite-journal'))).toBe('600');
      fs.rmSync(path.join(dataDir, 'quetzal.sqlite-journal'));

      // So does serve; and a start with nothing to tighten says nothing.
      loosen();
      fs.rmSync(path.join(dataDir, 'quetzal.sqlite-journal'));
      const service = await serve(env);
      expectTight();
      expect(tightenedLine(service.stdout())?.modeChanges).toHaveLength(3);
      expect(await service.stop('SIGTERM')).toBe(0);
      const quiet = await quetzal(['migrate', '--json'], env);
      expect(quiet.code).toBe(0);
      expect(tightenedLine(quiet.stderr)).toBeUndefined();

      // A console log written before the rule, at the server's next start.
      const logs = path.join(dataDir, 'logs');
      const chatty = await quetzalJson(['server:create', '--owner', 'alice', '--name', 'chatty', '--startup', 'sleep 60'], env);
      const log = path.join(logs, `${chatty.uuid}.log`);
      fs.writeFileSync(log, 'an old line\n', { mode: 0o644 });
      fs.chmodSync(log, 0o644);
      const again = await serve({ ...env, QUETZAL_BOOTSTRAP: 'off' });
      const key = await quetzalJson(['key:create', '--user', 'alice'], env);
      const power = await fetch(`${again.url}/api/client/servers/${chatty.identifier}/power`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.token}`, accept: 'application/json', 'content-type': 'application/json' },
        body: JSON.stringify({ signal: 'start' }),
      });
      expect(power.status).toBe(204);
      expect(modeOf(log)).toBe('600');
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'keeps a database outside DATA_DIR 0600 and leaves its (operator-made) folder as it is',
    async () => {
      const root = scratch();
      const dbFolder = path.join(root, 'db');
      fs.mkdirSync(dbFolder, { mode: 0o755 });
      fs.chmodSync(dbFolder, 0o755);
      const env = {
        DATA_DIR: path.join(root, 'data'),
        DATABASE_URL: `sqlite:${path.join(dbFolder, 'q.sqlite')}`,
        LOG_LEVEL: 'warn',
      };
      const service = await serve(env);
      const files = fs.readdirSync(dbFolder);
      expect(files).toEqual(expect.arrayContaining(['q.sqlite', 'q.sqlite-wal', 'q.sqlite-shm', 'q.sqlite.migrate-lock']));
      expect(modesOtherThan(dbFolder, files, '600')).toEqual([]);
      expect(modeOf(dbFolder)).toBe('755');
      expect(modeOf(env.DATA_DIR)).toBe('700');
      expect(await service.stop('SIGTERM')).toBe(0);

      // A folder the service has to create for the database is its own: 0700.
      const made = path.join(root, 'made', 'here');
      expect(await quetzalJson(['migrate'], { ...env, DATABASE_URL: `sqlite:${path.join(made, 'q.sqlite')}` })).toEqual({
        migrated: true,
      });
      expect([modeOf(path.join(root, 'made')), modeOf(made), modeOf(path.join(made, 'q.sqlite'))]).toEqual(['700', '700', '600']);
    },
    SPAWN_TIMEOUT_MS,
  );

  it.skipIf(process.getuid?.() !== 0)(
    'refuses a DATA_DIR that belongs to another user, saying whose it is (needs root to make one)',
    async () => {
      const dataDir = path.join(scratch(), 'data');
      fs.mkdirSync(dataDir, { mode: 0o755 });
      fs.chownSync(dataDir, 65534, 65534);
      const result = await quetzal(['migrate', '--json'], { DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain(`DATA_DIR ${dataDir} belongs to uid 65534, not to uid 0`);
      // Nothing was created in it, nor its mode changed.
      expect(fs.readdirSync(dataDir)).toEqual([]);
      expect(modeOf(dataDir)).toBe('755');
    },
    SPAWN_TIMEOUT_MS,
  );
});

describe.skipIf(!TEST_DATABASE_URL)('the service keeps its own files private (docs/reference/containment.md) [postgres]', () => {
  it(
    'serves from PostgreSQL with DATA_DIR 0700 and initial-api-key 0600, and no SQLite file',
    async () => {
      const box = await createSandbox('postgres');
      try {
        fs.chmodSync(box.dataDir, 0o755);
        const service = await serve(box.env);
        expect(modeOf(box.dataDir)).toBe('700');
        expect(modeOf(path.join(box.dataDir, 'initial-api-key'))).toBe('600');
        expect(fs.readdirSync(box.dataDir).filter((name) => name.includes('sqlite'))).toEqual([]);
        const token = fs.readFileSync(path.join(box.dataDir, 'initial-api-key'), 'utf8').trim();
        expect((await getJson(`${service.url}/api/client`, token)).status).toBe(200);
        expect(await service.stop('SIGTERM')).toBe(0);
      } finally {
        await box.dispose();
      }
    },
    SPAWN_TIMEOUT_MS,
  );
});
