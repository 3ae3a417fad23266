import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { expect, it } from 'vitest';
import { useSandbox, describeEachDialect, getJson, quetzal, quetzalJson, startService, type CliResult } from './helpers.js';

/**
 * The admin command line as an operator uses it (docs/reference/cli.md): the real
 * `bin/quetzal.js` in child processes, on a fresh database per block. Detailed
 * validation is in commands.test.ts, in-process.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Child processes are slow on a busy two-core machine: be patient with whole scenarios. */
const SPAWN_TIMEOUT_MS = 120_000;
const TOKEN = /^ptlc_[A-Za-z0-9]{43}$/;

/** A failure: status 1, nothing on standard output, one line on standard error. */
function expectFailure(result: CliResult, reason: RegExp) {
  expect(result.code, result.stderr).toBe(1);
  expect(result.stdout).toBe('');
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(reason);
}

describeEachDialect('quetzal command line', (dialect) => {
  const box = useSandbox(dialect);

  it(
    'migrate --json migrates a fresh database and prints {"migrated": true}',
    async () => {
      const result = await quetzal(['migrate', '--json'], box.env);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({ migrated: true });
      expect(result.stdout.trim().split('\n')).toHaveLength(1);
      const tables = (await box.db().db.introspection.getTables()).map((t) => t.name);
      expect(tables).toEqual(expect.arrayContaining(['users', 'servers', 'api_keys', 'subusers', 'schedules']));
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'prints usage for --help; exits 1 with nothing on stdout on usage errors and failures',
    async () => {
      const help = await quetzal(['--help'], box.env);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain('user:create');
      expect(help.stdout).toContain('subuser:add');

      const env = box.env;
      const [none, unknown, option, missing, noValue, server, key, owner, config] = await Promise.all([
        quetzal([], env),
        quetzal(['frobnicate', '--json'], env),
        quetzal(['user:create', '--username', 'x', '--email', 'x@example.com', '--colour', 'red', '--json'], env),
        quetzal(['user:create', '--email', 'x@example.com', '--json'], env),
        quetzal(['key:create', '--user', '--json'], env),
        quetzal(['server:status', '--server', 'ffffffff', '--set', 'none', '--json'], env),
        quetzal(['key:revoke', '--identifier', 'ptlc_NoSuchKey00', '--json'], env),
        quetzal(['server:create', '--owner', 'nobody@example.com', '--name', 'x', '--json'], env),
        quetzal(['migrate', '--json'], { ...env, PORT: 'eighty' }),
      ]);
      expect(none.code).toBe(1);
      expect(none.stdout).toBe('');
      expect(none.stderr).toContain('usage: quetzal <command>');
      expectFailure(unknown, /unknown command "frobnicate"/);
      expectFailure(option, /unknown option --colour/);
      expectFailure(missing, /--username is required/);
      expectFailure(noValue, /--user needs a value/);
      expectFailure(server, /No server matches "ffffffff"/);
      expectFailure(key, /No API key has the identifier/);
      expectFailure(owner, /No user matches "nobody@example.com"/);
      expectFailure(config, /PORT must be a whole number/);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'creates users, servers, keys and subusers that the running service honours',
    async () => {
      const env = box.env;
      const alice = await quetzalJson(['user:create', '--username', 'alice', '--email', 'alice@example.com'], env);
      expect(alice).toEqual({
        uuid: expect.stringMatching(UUID),
        username: 'alice',
        email: 'alice@example.com',
        root_admin: false,
      });
      const [root, carol, duplicate] = await Promise.all([
        quetzalJson(['user:create', '--username', 'root', '--email', 'root@example.com', '--admin'], env),
        quetzalJson(['user:create', '--username', 'carol', '--email', 'carol@example.com'], env),
        quetzal(['user:create', '--username', 'alice', '--email', 'other@example.com', '--json'], env),
      ]);
      expect(root.root_admin).toBe(true);
      expectFailure(duplicate, /username "alice" already exists/);

      // USER by email; no --startup: a volume, no process.
      const server = await quetzalJson(
        ['server:create', '--owner', 'alice@example.com', '--name', 'survival', '--stop-command', 'stop', '--backup-limit', '3'],
        env,
      );
      expect(server).toEqual({ uuid: expect.stringMatching(UUID), identifier: server.uuid.slice(0, 8), name: 'survival' });
      expect(fs.statSync(path.join(box.dataDir, 'volumes', server.uuid)).isDirectory()).toBe(true);
      const row = await box.db().db.selectFrom('servers').selectAll().where('uuid', '=', server.uuid).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ backup_limit: 3, startup: null, stop_command: 'stop', status: null });

      const [aliceKey, carolKeyHuman, subuser] = await Promise.all([
        // USER by UUID.
        quetzalJson(['key:create', '--user', alice.uuid, '--description', 'ci', '--allowed-ips', '127.0.0.1,::1/128'], env),
        // Without --json: a human summary, one `name: value` line each.
        quetzal(['key:create', '--user', 'carol'], env),
        quetzalJson(
          ['subuser:add', '--server', server.identifier, '--user', 'carol', '--permissions', 'schedule.read,backup.read'],
          env,
        ),
      ]);
      expect(aliceKey).toEqual({
        identifier: expect.stringMatching(/^ptlc_[A-Za-z0-9]{11}$/),
        token: expect.stringMatching(TOKEN),
      });
      expect(aliceKey.token.startsWith(aliceKey.identifier)).toBe(true);
      expect(carolKeyHuman.code).toBe(0);
      const carolToken = /^token:\s+(\S+)$/m.exec(carolKeyHuman.stdout)?.[1];
      expect(carolToken).toMatch(TOKEN);
      expect(subuser).toEqual({ server: server.uuid, user: carol.uuid, permissions: ['schedule.read', 'backup.read'] });

      const [replaced, ownerAsSubuser, suspended] = await Promise.all([
        quetzalJson(['subuser:add', '--server', server.uuid, '--user', carol.uuid, '--permissions', 'activity.read'], env),
        quetzal(['subuser:add', '--server', server.uuid, '--user', 'alice', '--permissions', 'activity.read', '--json'], env),
        quetzalJson(['server:status', '--server', server.identifier, '--set', 'suspended'], env),
      ]);
      expect(replaced).toEqual({ server: server.uuid, user: carol.uuid, permissions: ['activity.read'] });
      expectFailure(ownerAsSubuser, /owns this server/);
      expect(suspended).toEqual({ uuid: server.uuid, status: 'suspended' });
      const subusers = await box.db().db.selectFrom('subusers').select('permissions').where('server_id', '=', row.id).execute();
      expect(subusers.map((s) => JSON.parse(s.permissions))).toEqual([['activity.read']]);

      const service = await startService('serve', { ...env, QUETZAL_BOOTSTRAP: 'off' });
      try {
        const base = service.url!;
        const listing = await getJson(`${base}/api/client`, aliceKey.token);
        expect(listing.status).toBe(200);
        expect(listing.body.data.map((s: any) => s.attributes.identifier)).toEqual([server.identifier]);
        expect(listing.body.data[0].attributes).toMatchObject({ is_suspended: true, status: 'suspended' });
        // The subuser sees it too; a suspended server still answers GET /servers/{server}.
        const asCarol = await getJson(`${base}/api/client/servers/${server.identifier}`, carolToken!);
        expect(asCarol.status).toBe(200);

        // Commands work next to the running service.
        const [ready, revoked] = await Promise.all([
          quetzalJson(['server:status', '--server', server.uuid, '--set', 'none'], env),
          quetzalJson(['key:revoke', '--identifier', aliceKey.identifier], env),
        ]);
        expect(ready).toEqual({ uuid: server.uuid, status: null });
        expect(revoked).toEqual({ revoked: true });
        expect((await getJson(`${base}/api/client`, aliceKey.token)).status).toBe(401);
        const after = await getJson(`${base}/api/client/servers/${server.identifier}`, carolToken!);
        expect(after.status).toBe(200);
        expect(after.body.attributes).toMatchObject({ status: null, is_suspended: false });
      } finally {
        expect(await service.stop('SIGTERM')).toBe(0);
      }
      expect(service.stdout()).toContain('"msg":"stopped"');
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'backup:create and backup:import print the backup attributes',
    async () => {
      const env = box.env;
      await quetzalJson(['user:create', '--username', 'dave', '--email', 'dave@example.com'], env);
      const server = await quetzalJson(['server:create', '--owner', 'dave', '--name', 'backed up'], env);
      fs.writeFileSync(path.join(box.dataDir, 'volumes', server.uuid, 'world.dat'), 'hello');
      const archive = path.join(box.dataDir, 'old.tar.gz');
      fs.writeFileSync(archive, gzipSync(Buffer.alloc(1024)));
      const created = await quetzalJson(['backup:create', '--server', server.identifier, '--name', 'nightly'], env);
      const imported = await quetzalJson(
        ['backup:import', '--server', server.uuid, '--file', archive, '--name', 'imported'],
        env,
      );
      expect(created).toMatchObject({ uuid: expect.stringMatching(UUID), name: 'nightly', is_successful: true });
      expect(imported).toMatchObject({ uuid: expect.stringMatching(UUID), name: 'imported', is_successful: true });
      expect(fs.existsSync(path.join(box.dataDir, 'backups', `${created.uuid}.tar.gz`))).toBe(true);
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'worker runs the scheduler until SIGTERM, then exits 0',
    async () => {
      const worker = await startService('worker', box.env);
      expect(worker.url).toBeUndefined();
      expect(await worker.stop('SIGTERM')).toBe(0);
      expect(worker.stdout()).toContain('"msg":"stopped"');
    },
    SPAWN_TIMEOUT_MS,
  );

  it(
    'servers:stop stops the running servers of a running service and prints their uuids; none left prints []; an unknown server fails',
    async () => {
      const env = { ...box.env, CONTAINMENT: 'off', QUETZAL_BOOTSTRAP: 'off' };
      await quetzalJson(['user:create', '--username', 'olga', '--email', 'olga@example.com'], env);
      const server = await quetzalJson(
        ['server:create', '--owner', 'olga', '--name', 'sleeper', '--startup', 'exec sleep 1000'],
        env,
      );
      const key = await quetzalJson(['key:create', '--user', 'olga'], env);
      const service = await startService('serve', env);
      try {
        const start = await fetch(`${service.url!}/api/client/servers/${server.identifier}/power`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key.token}`, 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({ signal: 'start' }),
        });
        expect(start.status).toBe(204);
        const running = async () =>
          (await getJson(`${service.url!}/api/client/servers/${server.identifier}/resources`, key.token)).body.attributes
            .current_state;
        for (let i = 0; i < 100 && (await running()) !== 'running'; i++) await new Promise((resolve) => setTimeout(resolve, 100));
        expect(await running()).toBe('running');
        expect(await quetzalJson(['servers:stop'], env)).toEqual({ stopped: [server.uuid] });
        expect(await running()).toBe('offline');
        expect(await quetzalJson(['servers:stop'], env)).toEqual({ stopped: [] });
        expectFailure(await quetzal(['servers:stop', '--server', 'nope', '--json'], env), /server/i);
      } finally {
        expect(await service.stop('SIGTERM')).toBe(0);
      }
    },
    SPAWN_TIMEOUT_MS,
  );
});
