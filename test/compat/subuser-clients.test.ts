import { afterAll, beforeAll, expect, it } from 'vitest';
import { Client as JsPteroClient } from 'jspteroapi';
import { PteroClient } from '@devnote-dev/pterojs';
import { PERMISSIONS } from '../../src/http/permissions.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

/**
 * The real npm clients' subuser and permission methods, unchanged, against a
 * running instance over real HTTP (docs/reference/accounts.md).
 */
describeEachDatabase('existing clients: subusers', (database) => {
  const h = useHarness(database);
  let baseUrl = '';

  beforeAll(async () => {
    baseUrl = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await h.app.close();
  });

  const keysOf = (groups: Record<string, { keys: Record<string, string> }>) =>
    Object.entries(groups)
      .flatMap(([group, { keys }]) => Object.keys(keys).map((key) => `${group}.${key}`))
      .sort();

  it('jspteroapi: getAllPermissions, createSubUser, getAllSubUsers, getSubUserInfo, updateSubUserPermissions, deleteSubUser', async () => {
    const { owner, server } = await h.make.ownedServer();
    const friend = await h.make.user();
    const client = new JsPteroClient(baseUrl, owner.token, undefined, true);

    const permissions = (await client.getAllPermissions()) as unknown as {
      permissions: Record<string, { keys: Record<string, string> }>;
    };
    expect(keysOf(permissions.permissions)).toEqual([...PERMISSIONS].sort());

    const created = await client.createSubUser(server.uuid_short, friend.user.email, ['control.start', 'file.read']);
    expect(created).toMatchObject({ uuid: friend.user.uuid, email: friend.user.email, '2fa_enabled': false });
    expect([...created.permissions].sort()).toEqual(['control.start', 'file.read', 'websocket.connect']);

    const all = await client.getAllSubUsers(server.uuid_short);
    expect(all.map((s) => s.attributes.uuid)).toEqual([friend.user.uuid]);
    expect((await client.getSubUserInfo(server.uuid_short, friend.user.uuid)).username).toBe(friend.user.username);

    const updated = await client.updateSubUserPermissions(server.uuid_short, friend.user.uuid, ['control.stop']);
    expect([...updated.permissions].sort()).toEqual(['control.stop', 'websocket.connect']);

    expect(await client.deleteSubUser(server.uuid_short, friend.user.uuid)).toBe('Successfuly deleted SubUser!');
    expect(await client.getAllSubUsers(server.uuid_short)).toEqual([]);
  });

  it('pterojs: fetchPermissions, users.add, fetch, setPermissions, remove', async () => {
    const { owner, server } = await h.make.ownedServer();
    const friend = await h.make.user();
    const client = new PteroClient(baseUrl, owner.token, {
      fetchClient: false,
      servers: { fetch: false, cache: false },
    } as never);

    const permissions = (await client.fetchPermissions()) as unknown as Record<string, { keys: Record<string, string> }>;
    expect(keysOf(permissions)).toEqual([...PERMISSIONS].sort());

    const remote = await client.servers.fetch(server.uuid_short);
    const added = await remote.users.add(friend.user.email, ['control.console']);
    expect(added.uuid).toBe(friend.user.uuid);
    expect(added.email).toBe(friend.user.email);
    expect(added.createdAt.getTime()).toBe(Math.floor(friend.user.created_at / 1000) * 1000);
    expect([...added.permissions.value].sort()).toEqual(['control.console', 'websocket.connect']);

    const fetched = await remote.users.fetch({ force: true });
    expect([...fetched.values()].map((s) => s.uuid)).toEqual([friend.user.uuid]);
    const one = await remote.users.fetch(friend.user.uuid, { force: true });
    expect(one.username).toBe(friend.user.username);

    const updated = await remote.users.setPermissions(friend.user.uuid, ['control.start']);
    expect([...updated.permissions.value].sort()).toEqual(['control.start', 'websocket.connect']);

    await remote.users.remove(friend.user.uuid);
    expect((await remote.users.fetch({ force: true })).size).toBe(0);
  });
});
