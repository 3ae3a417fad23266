import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { PERMISSIONS } from '../../src/http/permissions.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

/**
 * Subusers through the client API (docs/reference/accounts.md, Pterodactyl's SubuserController):
 * shapes, who may grant what, the owner and self rules, accounts made for
 * unknown emails, activity entries, and GET /permissions.
 */
describeEachDatabase('subusers', (database) => {
  const h = useHarness(database);
  const base = (server: ServerRow) => `/api/client/servers/${server.uuid_short}/users`;
  const get = (token: string, url: string) => h.request(token, { method: 'GET', url });
  const post = (token: string, url: string, payload: Record<string, unknown>) =>
    h.request(token, { method: 'POST', url, payload });
  const del = (token: string, url: string) => h.request(token, { method: 'DELETE', url });

  async function events(server: ServerRow) {
    const rows = await h.db.db.selectFrom('activity_logs').selectAll().where('server_id', '=', server.id).orderBy('id').execute();
    return rows.map((r) => ({ event: r.event, actor_id: r.actor_id, properties: JSON.parse(r.properties) as unknown }));
  }

  it('GET /permissions answers every key of the catalogue in Pterodactyl shape', async () => {
    const { token } = await h.make.user();
    const res = await get(token, '/api/client/permissions');
    expect(res.statusCode).toBe(200);
    const body = res.json<{
      object: string;
      attributes: { permissions: Record<string, { description: string; keys: Record<string, string> }> };
    }>();
    expect(body.object).toBe('system_permissions');
    const keys = Object.entries(body.attributes.permissions).flatMap(([group, g]) => {
      expect(typeof g.description).toBe('string');
      return Object.keys(g.keys).map((k) => `${group}.${k}`);
    });
    expect(keys.sort()).toEqual([...PERMISSIONS].sort());
    for (const key of [
      'user.read',
      'database.view_password',
      'websocket.connect',
      'settings.reinstall',
      'activity.read',
      'control.console',
    ]) {
      expect(keys).toContain(key);
    }
    expect(keys).toHaveLength(40);
    expect((await h.request(null, { method: 'GET', url: '/api/client/permissions' })).statusCode).toBe(401);
  });

  it('the owner adds, shows, lists, updates and removes a subuser, each logged', async () => {
    const { owner, server } = await h.make.ownedServer();
    const friend = await h.make.user();
    const created = await post(owner.token, base(server), {
      email: friend.user.email.toUpperCase(),
      permissions: ['control.start'],
    });
    expect(created.statusCode).toBe(200);
    const attributes = {
      uuid: friend.user.uuid,
      username: friend.user.username,
      email: friend.user.email,
      image: `https://gravatar.com/avatar/${createHash('md5').update(friend.user.email.toLowerCase()).digest('hex')}`,
      '2fa_enabled': false,
      created_at: new Date(friend.user.created_at).toISOString().replace(/\.\d{3}Z$/, '+00:00'),
      permissions: ['control.start', 'websocket.connect'],
    };
    expect(created.json()).toEqual({ object: 'server_subuser', attributes });
    expect((await get(owner.token, `${base(server)}/${friend.user.uuid}`)).json()).toEqual({
      object: 'server_subuser',
      attributes,
    });
    expect((await get(owner.token, base(server))).json()).toEqual({
      object: 'list',
      data: [{ object: 'server_subuser', attributes }],
    });

    // The subuser now sees the server and may start it, nothing more.
    expect((await get(friend.token, `/api/client/servers/${server.uuid}`)).statusCode).toBe(200);
    expect((await get(friend.token, base(server))).statusCode).toBe(403);

    const updated = await post(owner.token, `${base(server)}/${friend.user.uuid}`, {
      permissions: ['user.read', 'control.start'],
    });
    expect(updated.statusCode).toBe(200);
    expect(updated.json<{ attributes: { permissions: string[] } }>().attributes.permissions.sort()).toEqual([
      'control.start',
      'user.read',
      'websocket.connect',
    ]);
    // The same set again changes and logs nothing.
    expect(
      (await post(owner.token, `${base(server)}/${friend.user.uuid}`, { permissions: ['user.read', 'control.start'] }))
        .statusCode,
    ).toBe(200);
    expect((await get(friend.token, base(server))).statusCode).toBe(200);

    expect((await del(owner.token, `${base(server)}/${friend.user.uuid}`)).statusCode).toBe(204);
    expect((await get(friend.token, `/api/client/servers/${server.uuid}`)).statusCode).toBe(404);
    expect((await get(owner.token, `${base(server)}/${friend.user.uuid}`)).statusCode).toBe(404);
    expect((await del(owner.token, `${base(server)}/${friend.user.uuid}`)).statusCode).toBe(404);

    expect(await events(server)).toEqual([
      {
        event: 'server:subuser.create',
        actor_id: owner.user.id,
        properties: { email: friend.user.email.toUpperCase(), permissions: ['control.start', 'websocket.connect'] },
      },
      {
        event: 'server:subuser.update',
        actor_id: owner.user.id,
        properties: {
          email: friend.user.email,
          old: ['control.start', 'websocket.connect'],
          new: ['control.start', 'user.read', 'websocket.connect'],
          revoked: true,
        },
      },
      { event: 'server:subuser.delete', actor_id: owner.user.id, properties: { email: friend.user.email, revoked: true } },
    ]);
  });

  it('an unknown email gets a new account without a password, named after the address', async () => {
    const { owner, server } = await h.make.ownedServer();
    const email = `new+person.${server.uuid_short}@example.test`;
    const res = await post(owner.token, base(server), { email, permissions: ['file.read'] });
    expect(res.statusCode).toBe(200);
    const attributes = res.json<{ attributes: { username: string; email: string } }>().attributes;
    expect(attributes.email).toBe(email);
    expect(attributes.username).toMatch(new RegExp(`^newperson\\.${server.uuid_short}[A-Za-z0-9]{3}$`));
    const user = await h.db.db
      .selectFrom('users')
      .select(['password', 'root_admin'])
      .where('email', '=', email)
      .executeTakeFirstOrThrow();
    expect(user).toEqual({ password: null, root_admin: 0 });
    // Adding the same address again is refused with Pterodactyl's sentence.
    const again = await post(owner.token, base(server), { email, permissions: ['file.read'] });
    expect(again.statusCode).toBe(400);
    expect(again.json().errors[0].detail).toBe(
      'A user with that email address is already assigned as a subuser for this server.',
    );
  });

  it('refuses the owner, the caller themselves, bad input and unknown keys', async () => {
    const { owner, server } = await h.make.ownedServer();
    const admin = await h.make.user({ admin: true });
    const ownerAdd = await post(owner.token, base(server), { email: owner.user.email, permissions: ['control.start'] });
    expect(ownerAdd.statusCode).toBe(400);
    expect(ownerAdd.json().errors[0].detail).toBe('You cannot add the server owner as a subuser for this server.');
    const selfAdd = await post(admin.token, base(server), { email: admin.user.email, permissions: ['control.start'] });
    expect(selfAdd.statusCode).toBe(400);
    expect(selfAdd.json().errors[0].detail).toBe('Editing your own subuser account is not permitted.');

    const unknown = await post(owner.token, base(server), {
      email: 'x@example.test',
      permissions: ['control.start', 'control.fly'],
    });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().errors[0].meta).toEqual({ source_field: 'permissions.1', rule: 'in' });
    for (const payload of [
      { email: 'not-an-email', permissions: ['control.start'] },
      { email: 'y@example.test' },
      { email: 'y@example.test', permissions: [] },
      { email: 'y@example.test', permissions: 'control.start' },
      { permissions: ['control.start'] },
    ]) {
      expect((await post(owner.token, base(server), payload)).statusCode).toBe(422);
    }
    expect((await post(owner.token, `${base(server)}/${admin.user.uuid}`, { permissions: ['control.start'] })).statusCode).toBe(
      404,
    );
    // Not a subuser's UUID, or not a UUID at all: a 404, never a database error.
    for (const reference of ['not-a-uuid', 'x'.repeat(80), '%25', admin.user.uuid.toUpperCase()]) {
      expect((await get(owner.token, `${base(server)}/${reference}`)).statusCode).toBe(404);
    }
    expect(await events(server)).toEqual([]);
    expect(
      await h.db.db.selectFrom('users').select('id').where('email', 'in', ['x@example.test', 'y@example.test']).execute(),
    ).toEqual([]);
  });

  it('a subuser grants only permissions they hold and never edits themselves', async () => {
    const { owner, server } = await h.make.ownedServer();
    const manager = await h.make.subuser(server, ['user.read', 'user.create', 'user.update', 'user.delete', 'control.start']);
    const other = await h.make.user();
    const tooMuch = await post(manager.token, base(server), { email: other.user.email, permissions: ['control.stop'] });
    expect(tooMuch.statusCode).toBe(403);
    expect(tooMuch.json().errors[0].detail).toBe(
      'Cannot assign permissions to a subuser that your account does not actively possess.',
    );
    // websocket.connect is added even though the manager lacks it.
    const ok = await post(manager.token, base(server), { email: other.user.email, permissions: ['control.start'] });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().attributes.permissions).toEqual(['control.start', 'websocket.connect']);
    const raise = await post(manager.token, `${base(server)}/${other.user.uuid}`, { permissions: ['control.stop'] });
    expect(raise.statusCode).toBe(403);

    const self = `${base(server)}/${manager.user.uuid}`;
    expect((await post(manager.token, self, { permissions: ['control.start'] })).statusCode).toBe(403);
    expect((await del(manager.token, self)).statusCode).toBe(403);
    // The owner may do both to the manager; a stranger sees nothing.
    const stranger = await h.make.user();
    expect((await get(stranger.token, base(server))).statusCode).toBe(404);
    expect((await del(owner.token, self)).statusCode).toBe(204);
    const reader = await h.make.subuser(server, ['user.read']);
    expect((await post(reader.token, base(server), { email: 'z@example.test', permissions: ['user.read'] })).statusCode).toBe(
      403,
    );
    expect((await del(reader.token, `${base(server)}/${other.user.uuid}`)).statusCode).toBe(403);
  });

  it('concurrent additions of one new email make one account and one subuser, the rest refused', async () => {
    const { owner, server } = await h.make.ownedServer();
    const other = await h.make.ownedServer();
    const email = `race.${server.uuid_short}@example.test`;
    const results = await Promise.all([
      ...Array.from({ length: 4 }, () => post(owner.token, base(server), { email, permissions: ['control.start'] })),
      ...Array.from({ length: 2 }, () => post(other.owner.token, base(other.server), { email, permissions: ['control.start'] })),
    ]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 200, 400, 400, 400, 400]);
    expect(await h.db.db.selectFrom('users').select('id').where('email', '=', email).execute()).toHaveLength(1);
    expect((await get(owner.token, base(server))).json().data).toHaveLength(1);
    expect((await events(server)).filter((e) => e.event === 'server:subuser.create')).toHaveLength(1);
  });
});
