import { describe, expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { eventsOf, makeEgg, useEgg } from './egg-fixture.js';

/**
 * GET /startup and PUT /startup/variable (docs/reference/eggs-and-installs.md, Pterodactyl's
 * StartupController): shapes, hidden and read-only variables, the variable's
 * rules, permissions, a server without an egg, activity entries.
 */
describeEachDatabase('startup routes', (database) => {
  const h = useHarness(database);
  const url = (server: ServerRow, tail = '') => `/api/client/servers/${server.uuid_short}/startup${tail}`;
  const put = (token: string, server: ServerRow, payload: Record<string, unknown>) =>
    h.request(token, { method: 'PUT', url: url(server, '/variable'), payload });

  async function eggServer() {
    const { egg, variables } = await makeEgg(h);
    const { owner, server } = await h.make.ownedServer({ limits: { memoryMiB: 1024 } });
    return { owner, egg, variables, server: await useEgg(h, server, egg, 'ghcr.io/pterodactyl/yolks:java_17') };
  }

  it("lists the user-viewable variables in Pterodactyl's shape, with the command raw and filled in", async () => {
    const { owner, server, egg } = await eggServer();
    const response = await h.request(owner.token, { method: 'GET', url: url(server) });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.object).toBe('list');
    expect(body.data.map((entry: { attributes: { env_variable: string } }) => entry.attributes.env_variable)).toEqual([
      'SERVER_JARFILE',
      'LEVEL_SEED',
      'BUILD_NUMBER',
      'MAX_PLAYERS',
    ]);
    expect(body.data[0]).toEqual({
      object: 'egg_variable',
      attributes: {
        name: 'Server Jar File',
        description: 'SERVER_JARFILE of the server',
        env_variable: 'SERVER_JARFILE',
        default_value: 'server.jar',
        server_value: null,
        is_editable: true,
        rules: 'required|regex:/^([\\w\\d._-]+)(\\.jar)$/',
      },
    });
    expect(body.data[2].attributes.is_editable).toBe(false);
    expect(body.meta).toEqual({
      startup_command: 'java -Xmx1024M -jar server.jar --port {{SERVER_PORT}} --seed ',
      raw_startup_command: egg.startup,
      docker_images: { 'Java 17': 'ghcr.io/pterodactyl/yolks:java_17', 'Java 21': 'ghcr.io/pterodactyl/yolks:java_21' },
    });
  });

  it('sets a variable: the egg_variable back, the command filled with it, a server:startup.edit entry', async () => {
    const { owner, server } = await eggServer();
    const response = await put(owner.token, server, { key: 'SERVER_JARFILE', value: 'paper.jar' });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.object).toBe('egg_variable');
    expect(body.attributes).toMatchObject({
      env_variable: 'SERVER_JARFILE',
      server_value: 'paper.jar',
      default_value: 'server.jar',
    });
    expect(body.meta.startup_command).toBe('java -Xmx1024M -jar paper.jar --port {{SERVER_PORT}} --seed ');
    // Set twice: the second write replaces the first (one row per server and variable) and logs old → new.
    expect((await put(owner.token, server, { key: 'SERVER_JARFILE', value: 'fabric.jar' })).statusCode).toBe(200);
    // The same value again changes nothing and logs nothing.
    expect((await put(owner.token, server, { key: 'SERVER_JARFILE', value: 'fabric.jar' })).statusCode).toBe(200);
    const rows = await h.db.db.selectFrom('server_variables').selectAll().where('server_id', '=', server.id).execute();
    expect(rows.map((row) => row.variable_value)).toEqual(['fabric.jar']);
    expect(await eventsOf(h, server)).toEqual([
      {
        event: 'server:startup.edit',
        actor_id: owner.user.id,
        properties: { variable: 'SERVER_JARFILE', old: null, new: 'paper.jar' },
      },
      {
        event: 'server:startup.edit',
        actor_id: owner.user.id,
        properties: { variable: 'SERVER_JARFILE', old: 'paper.jar', new: 'fabric.jar' },
      },
    ]);
    const listed = (await h.request(owner.token, { method: 'GET', url: url(server) })).json();
    expect(listed.data[0].attributes.server_value).toBe('fabric.jar');
    // The server object shows the same command, and the viewable variables.
    const shown = (await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}` })).json();
    expect(shown.attributes.invocation).toBe('java -Xmx1024M -jar fabric.jar --port {{SERVER_PORT}} --seed ');
    expect(shown.attributes.docker_image).toBe('ghcr.io/pterodactyl/yolks:java_17');
    expect(shown.attributes.relationships.variables.data).toHaveLength(4);
  });

  it("refuses unknown, hidden and read-only variables with Pterodactyl's 400s, changing nothing", async () => {
    const { owner, server } = await eggServer();
    const missing = 'The environment variable you are trying to edit does not exist.';
    for (const key of ['NOPE', 'SECRET_TOKEN']) {
      const response = await put(owner.token, server, { key, value: 'x' });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ errors: [{ code: 'BadRequestHttpException', status: '400', detail: missing }] });
    }
    const readOnly = await put(owner.token, server, { key: 'BUILD_NUMBER', value: '12' });
    expect(readOnly.statusCode).toBe(400);
    expect(readOnly.json().errors[0].detail).toBe('The environment variable you are trying to edit is read-only.');
    expect(await h.db.db.selectFrom('server_variables').selectAll().where('server_id', '=', server.id).execute()).toEqual([]);
    expect(await eventsOf(h, server)).toEqual([]);
  });

  it("answers 422 on `value` when the variable's rules refuse it, and on a missing key", async () => {
    const { owner, server } = await eggServer();
    const cases: [Record<string, unknown>, string, string][] = [
      [{ key: 'SERVER_JARFILE', value: 'server.zip' }, 'value', 'regex'],
      [{ key: 'SERVER_JARFILE' }, 'value', 'required'],
      [{ key: 'SERVER_JARFILE', value: '' }, 'value', 'required'],
      [{ key: 'LEVEL_SEED', value: 'x'.repeat(21) }, 'value', 'max'],
      [{ key: 'MAX_PLAYERS', value: 'lots' }, 'value', 'integer'],
      [{ key: 'MAX_PLAYERS', value: '101' }, 'value', 'between'],
      [{ key: 'MAX_PLAYERS', value: 0 }, 'value', 'between'],
      [{ value: 'paper.jar' }, 'key', 'required'],
    ];
    for (const [payload, field, rule] of cases) {
      const response = await put(owner.token, server, payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(422);
      expect(response.json().errors[0]).toMatchObject({ code: 'ValidationException', meta: { source_field: field, rule } });
    }
    // A nullable variable takes the empty value.
    const cleared = await put(owner.token, server, { key: 'LEVEL_SEED', value: '' });
    expect(cleared.statusCode).toBe(200);
    expect(cleared.json().attributes.server_value).toBe('');
    expect(await eventsOf(h, server)).toEqual([
      { event: 'server:startup.edit', actor_id: owner.user.id, properties: { variable: 'LEVEL_SEED', old: null, new: '' } },
    ]);
  });

  it('needs startup.read to read and startup.update to write (403 even for a bad body), and hides values from others', async () => {
    const { server } = await eggServer();
    const reader = await h.make.subuser(server, ['startup.read']);
    const stranger = await h.make.subuser(server, ['control.console']);
    expect((await h.request(reader.token, { method: 'GET', url: url(server) })).statusCode).toBe(200);
    expect((await h.request(stranger.token, { method: 'GET', url: url(server) })).statusCode).toBe(403);
    expect((await put(reader.token, server, { key: 'SERVER_JARFILE', value: 'a.jar' })).statusCode).toBe(403);
    expect((await put(reader.token, server, {})).statusCode).toBe(403);
    const writer = await h.make.subuser(server, ['startup.update']);
    expect((await put(writer.token, server, { key: 'SERVER_JARFILE', value: 'a.jar' })).statusCode).toBe(200);
    // Without startup.read the server object hides every value and lists no variables (Pterodactyl's ServerTransformer).
    const shown = (await h.request(stranger.token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}` })).json();
    expect(shown.attributes.invocation).toBe('java -Xmx1024M -jar [hidden] --port {{SERVER_PORT}} --seed [hidden]');
    expect(shown.attributes.relationships.variables.data).toEqual([]);
    const listed = (await h.request(stranger.token, { method: 'GET', url: '/api/client' })).json();
    expect(listed.data[0].attributes.invocation).toBe(shown.attributes.invocation);
    const other = await h.make.user();
    expect((await h.request(other.token, { method: 'GET', url: url(server) })).statusCode).toBe(404);
  });

  it('fills SERVER_IP and SERVER_PORT from the primary allocation', async () => {
    const { owner, server } = await eggServer();
    const now = h.clock.now();
    const ip = `10.77.${server.id % 250}.${(server.id * 7) % 250}`;
    const allocation = await h.db.db
      .insertInto('allocations')
      .values({ ip, port: 25565, ip_alias: null, server_id: server.id, notes: null, created_at: now, updated_at: now })
      .returningAll()
      .executeTakeFirstOrThrow();
    await h.db.db.updateTable('servers').set({ allocation_id: allocation.id }).where('id', '=', server.id).execute();
    const body = (await h.request(owner.token, { method: 'GET', url: url(server) })).json();
    expect(body.meta.startup_command).toBe('java -Xmx1024M -jar server.jar --port 25565 --seed ');
  });

  it('a server without an egg: no variables, its own command, no images; every variable is unknown', async () => {
    const { owner, server } = await h.make.ownedServer({ startup: 'echo hello {{SERVER_MEMORY}}' });
    const body = (await h.request(owner.token, { method: 'GET', url: url(server) })).json();
    expect(body).toEqual({
      object: 'list',
      data: [],
      meta: { startup_command: 'echo hello 0', raw_startup_command: 'echo hello {{SERVER_MEMORY}}', docker_images: {} },
    });
    expect((await put(owner.token, server, { key: 'SERVER_JARFILE', value: 'a.jar' })).statusCode).toBe(400);
  });

  it('is refused while the server installs (409), read still allowed', async () => {
    const { owner, server } = await eggServer();
    await h.make.setStatus(server, 'installing');
    expect((await h.request(owner.token, { method: 'GET', url: url(server) })).statusCode).toBe(200);
    expect((await put(owner.token, server, { key: 'SERVER_JARFILE', value: 'a.jar' })).statusCode).toBe(409);
  });
});

describe('startup command rendering', () => {
  it('fills each placeholder once: a value holding {{...}} is not filled again', async () => {
    const { renderStartupCommand } = await import('../../src/modules/startup/startup.command.js');
    const variable = {
      id: 1,
      egg_id: 1,
      sort: 0,
      name: 'A',
      description: '',
      env_variable: 'A',
      default_value: '',
      user_viewable: 1,
      user_editable: 1,
      rules: '',
      created_at: 0,
      updated_at: 0,
      server_value: '{{SERVER_MEMORY}}',
    };
    expect(renderStartupCommand('run {{A}} {{SERVER_MEMORY}}', { memoryMiB: 512, allocation: null }, [variable])).toBe(
      'run {{SERVER_MEMORY}} 512',
    );
  });
});
