import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { bootstrapFirstStart, DEMO_STARTUP, writeInitialKeyFile } from '../../src/bootstrap.js';
import { CliError, type CliContext, type CliOptions } from '../../src/cli/command.js';
import { command as keyCreate } from '../../src/cli/commands/key-create.js';
import { command as keyRevoke } from '../../src/cli/commands/key-revoke.js';
import { command as serverCreate } from '../../src/cli/commands/server-create.js';
import { command as serverStatus } from '../../src/cli/commands/server-status.js';
import { command as subuserAdd } from '../../src/cli/commands/subuser-add.js';
import { command as userCreate } from '../../src/cli/commands/user-create.js';
import { parseArguments, runCli, searchPathOption } from '../../src/cli/main.js';
import { loadConfig } from '../../src/config.js';
import { LocalDaemon } from '../../src/daemon/local/local-daemon.js';
import { openDatabase } from '../../src/db/database.js';
import { listeningUrl } from '../../src/main.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

/**
 * The admin commands in-process, for the validation details the contract-level
 * tests (cli.test.ts, real binary) do not spell out one by one.
 */

describe('argument parsing', () => {
  const spec = { valueOptions: ['name', 'stop-command'], flagOptions: ['admin'] };

  it('reads --opt value, --opt=value, flags and --json', () => {
    expect(parseArguments(spec, ['--name', 'a b', '--stop-command=--quit', '--admin', '--json'])).toEqual({
      options: { name: 'a b', 'stop-command': '--quit', admin: true },
      json: true,
      help: false,
    });
    expect(parseArguments(spec, ['--name', '-1'])).toMatchObject({ options: { name: '-1' } });
    expect(parseArguments(spec, ['--help']).help).toBe(true);
    expect(parseArguments(spec, ['-h']).help).toBe(true);
  });

  it.each([
    [['--nope', 'x'], /unknown option --nope/],
    [['--name'], /--name needs a value/],
    [['--name', '--admin'], /--name needs a value/],
    [['--admin=yes'], /--admin takes no value/],
    [['--json=1'], /--json takes no value/],
    [['--name', 'a', '--name', 'b'], /--name given twice/],
    [['stray'], /unexpected argument "stray"/],
    [['--'], /unexpected argument "--"/],
  ])('refuses %j', (args, reason) => {
    expect(() => parseArguments(spec, args)).toThrow(reason);
  });

  it('keeps standard output empty and writes one line on a usage error', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: (t: string) => void out.push(t), stderr: (t: string) => void err.push(t) };
    expect(await runCli(['user:create', '--username', 'x', '--bogus'], { io, env: {} })).toBe(1);
    expect(out).toEqual([]);
    expect(err).toEqual([
      'quetzal: unknown option --bogus (usage: quetzal user:create --username U --email E [--admin] [--password-stdin])\n',
    ]);
    expect(await runCli(['user:create', '--help'], { io, env: {} })).toBe(0);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(
      /^usage: quetzal user:create --username U --email E \[--admin\] \[--password-stdin\]\n\nCreate a user\./,
    );
  });

  it('takes the PostgreSQL schema from the URL so that migrations stay in it', () => {
    expect(searchPathOption('postgres://u@h/db?options=-c%20search_path%3Dt_abc')).toEqual({ searchPath: 't_abc' });
    expect(searchPathOption('postgres://u@h/db?options=--search_path%3Dother')).toEqual({ searchPath: 'other' });
    expect(searchPathOption('postgres://u@h/db')).toEqual({});
    expect(searchPathOption('sqlite:/tmp/x.sqlite')).toEqual({});
  });

  it('announces the address actually bound unless APP_URL says otherwise', () => {
    const address = { address: '127.0.0.1', port: 41234, family: 'IPv4' };
    expect(listeningUrl(loadConfig({ PORT: '0' }), address)).toBe('http://127.0.0.1:41234');
    expect(listeningUrl(loadConfig({ PORT: '0', HOST: '0.0.0.0' }), { ...address, address: '0.0.0.0' })).toBe(
      'http://127.0.0.1:41234',
    );
    expect(listeningUrl(loadConfig({ APP_URL: 'https://panel.example.com/' }), address)).toBe('https://panel.example.com');
  });
});

describeEachDatabase('admin commands', (database) => {
  const h = useHarness(database);
  const ctx = (): CliContext => ({ config: h.config, database: h.db, daemon: h.daemon, clock: h.clock });
  const run = (command: { run(ctx: CliContext, options: CliOptions): Promise<Record<string, unknown>> }, options: CliOptions) =>
    command.run(ctx(), options);
  let n = 0;
  const fresh = (prefix: string) => `${prefix}${Date.now().toString(36)}${++n}`;

  it('user:create validates the username and email, and refuses duplicates whatever their case', async () => {
    const name = fresh('u');
    const user = await run(userCreate, { username: name, email: `${name}@Example.com`, admin: true });
    expect(user).toMatchObject({ username: name, email: `${name}@Example.com`, root_admin: true });
    await expect(run(userCreate, { username: name.toUpperCase(), email: `x${name}@example.com` })).rejects.toThrow(
      /username .* already exists/,
    );
    await expect(run(userCreate, { username: `x${name}`, email: `${name}@EXAMPLE.COM` })).rejects.toThrow(
      /email .* already exists/,
    );
    for (const username of ['has space', 'tab\there', 'a@b', '6f1c0b8e-1d7a-4c4e-9a51-2f6a7a7b1c11', 'x'.repeat(192)]) {
      await expect(run(userCreate, { username, email: `${fresh('e')}@example.com` }), username).rejects.toThrow(CliError);
    }
    for (const email of ['plain', 'a@', '@b.c', 'a b@c.d', `${'x'.repeat(190)}@e.io`]) {
      await expect(run(userCreate, { username: fresh('u'), email }), email).rejects.toThrow(/--email is not a valid/);
    }
    await expect(run(userCreate, { username: '  ', email: 'a@b.c' })).rejects.toThrow(/--username is required/);
    expect(await run(userCreate, { username: fresh('u'), email: `${fresh('e')}@localhost` })).toMatchObject({
      root_admin: false,
    });
  });

  it('server:create validates its options, defaults the backup limit to 10 and prepares the volume', async () => {
    const { user } = await h.make.user();
    const base = { owner: user.username, name: 'world' };
    const created = await run(serverCreate, { ...base, startup: 'java -jar server.jar' });
    const row = await h.db.db
      .selectFrom('servers')
      .selectAll()
      .where('uuid', '=', created.uuid as string)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      owner_id: user.id,
      backup_limit: 10,
      startup: 'java -jar server.jar',
      stop_command: null,
      uuid_short: created.identifier,
    });
    expect(fs.statSync(h.daemon.volumeDir(row.uuid)).isDirectory()).toBe(true);

    const none = await run(serverCreate, { ...base, owner: user.uuid, 'backup-limit': '0' });
    expect(
      (
        await h.db.db
          .selectFrom('servers')
          .select('backup_limit')
          .where('uuid', '=', none.uuid as string)
          .executeTakeFirstOrThrow()
      ).backup_limit,
    ).toBe(0);
    for (const limit of ['-1', '1.5', 'ten', '99999999999']) {
      await expect(run(serverCreate, { ...base, 'backup-limit': limit }), limit).rejects.toThrow(
        /--backup-limit must be a whole number/,
      );
    }
    await expect(run(serverCreate, { ...base, 'stop-command': 'save\nstop' })).rejects.toThrow(/single line/);
    await expect(run(serverCreate, { ...base, name: 'n'.repeat(192) })).rejects.toThrow(/at most 191/);
    await expect(run(serverCreate, { ...base, startup: '  ' })).rejects.toThrow(/--startup needs a value/);
    await expect(run(serverCreate, { ...base, owner: 'nobody-at-all' })).rejects.toThrow(/No user matches/);
  });

  it('server:status sets each status, refuses others, and never overrides a restore', async () => {
    const { server } = await h.make.ownedServer();
    for (const [set, status] of [
      ['installing', 'installing'],
      ['install_failed', 'install_failed'],
      ['suspended', 'suspended'],
      ['none', null],
    ] as const) {
      expect(await run(serverStatus, { server: server.uuid_short, set })).toEqual({ uuid: server.uuid, status });
      expect(
        (await h.db.db.selectFrom('servers').select('status').where('id', '=', server.id).executeTakeFirstOrThrow()).status,
      ).toBe(status);
    }
    await expect(run(serverStatus, { server: server.uuid, set: 'restoring_backup' })).rejects.toThrow(/--set must be one of/);
    await expect(run(serverStatus, { server: server.uuid, set: 'null' })).rejects.toThrow(/--set must be one of/);
    await h.make.setStatus(server, 'restoring_backup');
    await expect(run(serverStatus, { server: server.uuid, set: 'none' })).rejects.toThrow(/restoring a backup/);
    expect(
      (await h.db.db.selectFrom('servers').select('status').where('id', '=', server.id).executeTakeFirstOrThrow()).status,
    ).toBe('restoring_backup');
  });

  it('key:create validates allowed IPs and the description; key:revoke is immediate and idempotent', async () => {
    const { user } = await h.make.user();
    const key = await run(keyCreate, {
      user: user.email,
      description: 'deploy bot',
      'allowed-ips': ' 10.0.0.0/8, ::1 ,10.0.0.0/8,',
    });
    const row = await h.db.db
      .selectFrom('api_keys')
      .selectAll()
      .where('identifier', '=', key.identifier as string)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ user_id: user.id, description: 'deploy bot', revoked_at: null });
    expect(JSON.parse(row.allowed_ips)).toEqual(['10.0.0.0/8', '::1']);
    for (const ips of ['300.1.1.1', '10.0.0.0/33', 'localhost', '1.2.3.4/x', ',']) {
      await expect(run(keyCreate, { user: user.uuid, 'allowed-ips': ips }), ips).rejects.toThrow(/--allowed-ips/);
    }
    await expect(run(keyCreate, { user: user.uuid, description: 'd'.repeat(501) })).rejects.toThrow(/at most 500/);
    await expect(run(keyCreate, { user: 'no-such-user' })).rejects.toThrow(/No user matches/);

    const open = await run(keyCreate, { user: user.username });
    expect((await h.request(open.token as string, { method: 'GET', url: '/api/client' })).statusCode).toBe(200);
    expect(await run(keyRevoke, { identifier: open.identifier as string })).toEqual({ revoked: true });
    expect((await h.request(open.token as string, { method: 'GET', url: '/api/client' })).statusCode).toBe(401);
    expect(await run(keyRevoke, { identifier: open.identifier as string })).toEqual({ revoked: true });
    await expect(run(keyRevoke, { identifier: 'ptlc_unknown0000' })).rejects.toThrow(/No API key/);
  });

  it('subuser:add checks permission names, replaces permissions, and refuses the owner', async () => {
    const { owner, server } = await h.make.ownedServer();
    const { user: sub, token } = await h.make.user();
    const out = await run(subuserAdd, {
      server: server.uuid_short,
      user: sub.username,
      permissions: 'backup.read, schedule.read,backup.read',
    });
    expect(out).toEqual({ server: server.uuid, user: sub.uuid, permissions: ['backup.read', 'schedule.read'] });
    expect(
      (await h.request(token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}/schedules` })).statusCode,
    ).toBe(200);

    await run(subuserAdd, { server: server.uuid, user: sub.email, permissions: 'activity.read' });
    const rows = await h.db.db.selectFrom('subusers').selectAll().where('server_id', '=', server.id).execute();
    expect(rows.map((r) => [r.user_id, JSON.parse(r.permissions)])).toEqual([[sub.id, ['activity.read']]]);
    // Replaced, not merged: the permission taken away no longer works.
    expect(
      (await h.request(token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}/schedules` })).statusCode,
    ).toBe(403);

    await expect(
      run(subuserAdd, { server: server.uuid, user: sub.uuid, permissions: 'schedule.read,file.nope,nope' }),
    ).rejects.toThrow(/unknown permissions file\.nope, nope \(known: websocket\.connect/);
    await expect(run(subuserAdd, { server: server.uuid, user: sub.uuid, permissions: ' , ' })).rejects.toThrow(/at least one/);
    await expect(run(subuserAdd, { server: server.uuid, user: owner.user.uuid, permissions: 'activity.read' })).rejects.toThrow(
      /owns this server/,
    );
    await expect(run(subuserAdd, { server: 'deadbeef', user: sub.uuid, permissions: 'activity.read' })).rejects.toThrow(
      /No server matches/,
    );
    await expect(run(subuserAdd, { server: server.uuid, user: 'ghost', permissions: 'activity.read' })).rejects.toThrow(
      /No user matches/,
    );
  });
});

describeEachDatabase('first-start bootstrap', (database) => {
  it('creates the admin, server and key once when two start together, and nothing once users exist', async () => {
    const db = await database.open();
    // A second connection (pool) to the same database, as a second instance would have.
    const other = db.dialect === 'postgres' ? openDatabase(db.url, { ...searchPathOption(db.url), poolSize: 2 }) : db;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-boot-'));
    const daemon = new LocalDaemon(dataDir);
    const clock = { now: () => Date.now() };
    try {
      const results = await Promise.all([
        bootstrapFirstStart({ db: db.db, dialect: db.dialect, daemon, clock }),
        bootstrapFirstStart({ db: other.db, dialect: other.dialect, daemon, clock }),
      ]);
      const created = results.filter((r) => r !== null);
      expect(created).toHaveLength(1);
      expect(created[0]).toMatchObject({ username: 'admin', email: 'admin@localhost', token: expect.stringMatching(/^ptlc_/) });
      const servers = await db.db.selectFrom('servers').selectAll().execute();
      expect(servers.map((s) => [s.name, s.startup, s.uuid_short])).toEqual([
        ['demo', DEMO_STARTUP, created[0]!.serverIdentifier],
      ]);
      expect(fs.statSync(daemon.volumeDir(servers[0]!.uuid)).isDirectory()).toBe(true);
      expect(await bootstrapFirstStart({ db: db.db, dialect: db.dialect, daemon, clock })).toBeNull();
      expect(await db.db.selectFrom('users').select('id').execute()).toHaveLength(1);
    } finally {
      if (other !== db) await other.close();
      await daemon.close();
      await db.dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('initial-api-key file', () => {
  it('is the token and a newline, mode 0600, even over an existing file', () => {
    const dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-key-')), 'not-yet');
    const file = writeInitialKeyFile(dataDir, 'ptlc_first');
    expect(fs.readFileSync(file, 'utf8')).toBe('ptlc_first\n');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    fs.chmodSync(file, 0o644);
    writeInitialKeyFile(dataDir, 'ptlc_second');
    expect(fs.readFileSync(file, 'utf8')).toBe('ptlc_second\n');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
  });
});
