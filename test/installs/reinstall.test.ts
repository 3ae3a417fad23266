/**
 * Reinstalls through the client route (docs/reference/eggs-and-installs.md) on a real app, a real
 * database and the real daemon (confined with CONTAINMENT=on: the script in
 * its own runc box as the server's uid): 202 at once, the running server
 * stopped first, status `installing` then null or `install_failed`, the
 * websocket's install events in order (output to the owner only), the files
 * the egg's script wrote, `server:reinstall` in the activity log, 403
 * without `settings.reinstall`, 409 per docs/reference/servers.md#status.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { recoverInstalls } from '../../src/modules/installs/install.recovery.js';
import { installServer } from '../../src/modules/installs/install.service.js';
import { daemonServer } from '../../src/modules/servers/servers.service.js';
import { ECHO_STARTUP } from '../helpers/containment.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { connected, eventually, useLiveHarness } from '../websocket/helpers.js';
import { makeEgg, PROGRAM_SCRIPT, useEgg } from './egg-rows.js';

describeEachDatabase('reinstalling a server', (database) => {
  const h = useLiveHarness(database);
  const started: ServerRow[] = [];
  afterEach(async () => {
    await h.jobs.idle();
    for (const server of started.splice(0)) await h.daemon.power(daemonServer(server), 'kill').catch(() => undefined);
  });

  const reinstall = (token: string, server: ServerRow) =>
    h.request(token, { method: 'POST', url: `/api/client/servers/${server.uuid_short}/settings/reinstall` });
  const statusOf = async (server: ServerRow) =>
    (await h.db.db.selectFrom('servers').select('status').where('id', '=', server.id).executeTakeFirstOrThrow()).status;
  const events = async (server: ServerRow) =>
    (await h.db.db.selectFrom('activity_logs').select(['event', 'actor_id']).where('server_id', '=', server.id).execute()).map(
      (row) => `${row.event} by ${row.actor_id ?? 'system'}`,
    );

  async function serverWithEgg(script: string, version: string | null = '2.5.0', entrypoint = 'bash') {
    const made = await h.make.ownedServer({ startup: ECHO_STARTUP, limits: { memoryMiB: 256 } });
    const egg = await makeEgg(h.db.db, { script, entrypoint, now: h.clock.now() });
    await useEgg(h.db.db, made.server, egg, version, h.clock.now());
    return made;
  }

  it('stops the server, runs the egg script in its box, streams its output and marks it installed', async () => {
    // Pterodactyl's installers run `ash` (Alpine); where the image has none, sh runs the script and says so.
    const { owner, server } = await serverWithEgg(PROGRAM_SCRIPT, '2.5.0', 'ash');
    const sub = await h.make.subuser(server, ['websocket.connect']);
    started.push(server);
    await h.daemon.power(daemonServer(server), 'start');
    await eventually(async () => (await h.daemon.state(daemonServer(server))) === 'running', 15_000);
    const ownerSocket = await connected(h, owner.token, server);
    const subSocket = await connected(h, sub.token, server);

    const res = await reinstall(owner.token, server);
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toEqual([]);
    expect(await statusOf(server)).toBe('installing');
    // Power is refused while it installs (docs/reference/servers.md#status).
    const power = await h.request(owner.token, {
      method: 'POST',
      url: `/api/client/servers/${server.uuid_short}/power`,
      payload: { signal: 'start' },
    });
    expect(power.statusCode).toBe(409);

    await ownerSocket.waitFor('install completed', () => true, 60_000);
    await h.jobs.idle();
    expect(await statusOf(server)).toBeNull();
    expect(await h.daemon.state(daemonServer(server))).toBe('offline');

    // In order: the server stopped, install started, its lines, install completed.
    const sequence = ownerSocket.frames
      .filter((f) => ['install started', 'install output', 'install completed'].includes(f.event) || f.event === 'status')
      .map((f) => (f.event === 'install output' || f.event === 'status' ? `${f.event}: ${f.args?.[0]}` : f.event));
    const begin = sequence.indexOf('install started');
    expect(sequence.slice(0, begin)).toContain('status: offline');
    const output = sequence.slice(begin + 1, -1).filter((line) => !/ash is not (in this image|on this machine)/.test(line));
    expect(output[0]).toBe(`install output: installing version 2.5.0 on port none for ${server.uuid}`);
    expect(output.at(-1)).toBe('install output: install done');
    expect(sequence.at(-1)).toBe('install completed');
    // The subuser hears that it installs, not what it prints.
    expect(subSocket.all('install started')).toHaveLength(1);
    expect(subSocket.all('install output')).toEqual([]);
    await subSocket.waitFor('install completed');

    const volume = path.join(h.dataDir, 'volumes', server.uuid);
    expect(fs.readFileSync(path.join(volume, 'server.mjs'), 'utf8')).toBe('console.log("hello from version 2.5.0");\n');
    expect(fs.readFileSync(path.join(volume, 'config/install.txt'), 'utf8')).toBe('memory=256\n');
    if (h.daemon.containment === 'on') {
      const uid = fs.statSync(volume).uid;
      expect(uid).not.toBe(0);
      expect(fs.statSync(path.join(volume, 'server.mjs')).uid).toBe(uid);
      expect(fs.statSync(path.join(volume, 'config')).uid).toBe(uid);
    }
    expect(await events(server)).toContain(`server:reinstall by ${owner.user.id}`);
    expect((await h.daemon.installLog(daemonServer(server), 1))[0]).toBe('[Quetzal] the install script exited with code 0');
    ownerSocket.close();
    subSocket.close();
  }, 90_000);

  it('marks a failing install install_failed with its exit code, and the client cannot retry it (409)', async () => {
    const { owner, server } = await serverWithEgg('echo "downloading"\necho "no such version" >&2\nexit 7', null);
    const res = await reinstall(owner.token, server);
    expect(res.statusCode).toBe(202);
    await h.jobs.idle();
    expect(await statusOf(server)).toBe('install_failed');
    expect(await h.daemon.installLog(daemonServer(server), 10)).toEqual([
      'downloading',
      'no such version',
      '[Quetzal] the install script exited with code 7',
    ]);
    const again = await reinstall(owner.token, server);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ errors: [{ status: '409' }] });
    // An admin's retry (server:reinstall) is allowed from install_failed.
    expect(await installServer(h.deps, server.id, { reinstall: true })).toEqual({ status: 'install_failed' });
  }, 60_000);

  it('needs settings.reinstall (403), and is refused while suspended or restoring (409)', async () => {
    const { server } = await serverWithEgg('echo hi');
    const without = await h.make.subuser(server, ['control.start', 'settings.rename']);
    expect((await reinstall(without.token, server)).statusCode).toBe(403);
    const holder = await h.make.subuser(server, ['settings.reinstall']);
    for (const status of ['suspended', 'restoring_backup', 'installing'] as const) {
      await h.make.setStatus(server, status);
      expect((await reinstall(holder.token, server)).statusCode, status).toBe(409);
    }
    await h.make.setStatus(server, null);
    expect((await reinstall(holder.token, server)).statusCode).toBe(202);
    await h.jobs.idle();
    expect(await statusOf(server)).toBeNull();
    expect(await events(server)).toEqual([`server:reinstall by ${holder.user.id}`]);
  }, 60_000);

  it('marks a server without an egg installed at once, with no install events', async () => {
    const { owner, server } = await h.make.ownedServer();
    const socket = await connected(h, owner.token, server);
    expect((await reinstall(owner.token, server)).statusCode).toBe(202);
    await h.jobs.idle();
    expect(await statusOf(server)).toBeNull();
    await eventually(async () => (await events(server)).length === 1);
    expect(socket.all('install started')).toEqual([]);
    socket.close();
  });

  it('answers send logs with the install log while the server installs', async () => {
    const { owner, server } = await serverWithEgg('echo "step one"\nsleep 2\necho "step two"');
    const socket = await connected(h, owner.token, server);
    expect((await reinstall(owner.token, server)).statusCode).toBe(202);
    await socket.waitFor('install output', (f) => f.args?.[0] === 'step one', 30_000);
    const before = socket.all('install output').length;
    socket.send('send logs');
    await eventually(() => socket.all('install output').length > before, 10_000, 'the install log');
    expect(socket.all('install output')[before]?.args).toEqual(['step one']);
    await socket.waitFor('install completed', () => true, 30_000);
    socket.close();
  }, 60_000);

  it('recovery at start: a claim whose install never reached the node fails, with the reason as the whole log', async () => {
    // A SIGKILL right after the claim committed: `installing`, no record, the log an older install's.
    const { server } = await serverWithEgg('echo hi');
    expect(await installServer(h.deps, server.id, { reinstall: false })).toEqual({ status: null });
    await h.make.setStatus(server, 'installing');
    const warnings: object[] = [];
    const failed = await recoverInstalls(h.deps, { warn: (obj) => warnings.push(obj), error: () => undefined });
    expect(failed).toContain(server.uuid);
    expect(await statusOf(server)).toBe('install_failed');
    expect(await h.daemon.installLog(daemonServer(server), 10)).toEqual([
      '[Quetzal] the install failed: the service stopped during the install',
    ]);
    expect(warnings).toContainEqual({ serverUuid: server.uuid, reason: 'the service stopped during the install' });
    // Run again (a start cut short during recovery): nothing left to do.
    expect(await recoverInstalls(h.deps, { warn: () => undefined, error: () => undefined })).not.toContain(server.uuid);
  });
});
