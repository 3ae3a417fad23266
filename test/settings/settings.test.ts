import { expect, it } from 'vitest';
import type { ServerRow } from '../../src/db/schema.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { eventsOf, makeEgg, useEgg } from '../startup/egg-fixture.js';

const JAVA_17 = 'ghcr.io/pterodactyl/yolks:java_17';
const JAVA_21 = 'ghcr.io/pterodactyl/yolks:java_21';

/**
 * POST /settings/rename and PUT /settings/docker-image (docs/reference/eggs-and-installs.md, Pterodactyl's
 * SettingsController): effects, activity entries, validation, permissions, a
 * server without an egg.
 */
describeEachDatabase('settings routes', (database) => {
  const h = useHarness(database);
  const url = (server: ServerRow, tail: string) => `/api/client/servers/${server.uuid_short}/settings/${tail}`;
  const rename = (token: string, server: ServerRow, payload: Record<string, unknown>) =>
    h.request(token, { method: 'POST', url: url(server, 'rename'), payload });
  const setImage = (token: string, server: ServerRow, payload: Record<string, unknown>) =>
    h.request(token, { method: 'PUT', url: url(server, 'docker-image'), payload });
  const row = (server: ServerRow) =>
    h.db.db.selectFrom('servers').selectAll().where('id', '=', server.id).executeTakeFirstOrThrow();

  it('renames: 204, name and description stored, one entry for each that changed', async () => {
    const { owner, server } = await h.make.ownedServer({ name: 'before' });
    const response = await rename(owner.token, server, { name: '  after  ', description: 'A survival world' });
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe('');
    expect(await row(server)).toMatchObject({ name: 'after', description: 'A survival world' });
    // The name alone: the description is kept; the same name again logs nothing.
    expect((await rename(owner.token, server, { name: 'after' })).statusCode).toBe(204);
    expect((await row(server)).description).toBe('A survival world');
    expect(await eventsOf(h, server)).toEqual([
      { event: 'server:settings.rename', actor_id: owner.user.id, properties: { old: 'before', new: 'after' } },
      { event: 'server:settings.description', actor_id: owner.user.id, properties: { old: '', new: 'A survival world' } },
    ]);
    const shown = (await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}` })).json();
    expect(shown.attributes).toMatchObject({ name: 'after', description: 'A survival world' });
    // The activity log lists them with their properties, none of them "additional" (Pterodactyl's translations name them).
    const activity = (
      await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}/activity` })
    ).json();
    const listed = activity.data.map((entry: { attributes: Record<string, unknown> }) => entry.attributes);
    expect(
      listed.map((entry: Record<string, unknown>) => [entry.event, entry.properties, entry.has_additional_metadata]),
    ).toEqual([
      ['server:settings.description', { old: '', new: 'A survival world' }, false],
      ['server:settings.rename', { old: 'before', new: 'after' }, false],
    ]);
  });

  it('validates the name (required, at most 191 characters) and changes nothing on failure', async () => {
    const { owner, server } = await h.make.ownedServer({ name: 'kept' });
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'required'],
      [{ name: '   ' }, 'required'],
      [{ name: 'x'.repeat(192) }, 'max'],
      [{ name: 42 }, 'string'],
      [{ name: 'ok\u0000' }, 'regex'],
    ];
    for (const [payload, rule] of cases) {
      const response = await rename(owner.token, server, payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(422);
      expect(response.json().errors[0]).toMatchObject({ code: 'ValidationException', meta: { source_field: 'name', rule } });
    }
    expect((await rename(owner.token, server, { name: '🦜'.repeat(191) })).statusCode).toBe(204);
    expect(await eventsOf(h, server)).toHaveLength(1);
  });

  it('needs settings.rename (403 before the body is read) and refuses while installing (409)', async () => {
    const { owner, server } = await h.make.ownedServer();
    const other = await h.make.subuser(server, ['startup.read', 'startup.docker-image']);
    expect((await rename(other.token, server, { name: 'x' })).statusCode).toBe(403);
    expect((await rename(other.token, server, {})).statusCode).toBe(403);
    const allowed = await h.make.subuser(server, ['settings.rename']);
    expect((await rename(allowed.token, server, { name: 'by subuser' })).statusCode).toBe(204);
    expect((await eventsOf(h, server))[0]).toMatchObject({ event: 'server:settings.rename', actor_id: allowed.user.id });
    await h.make.setStatus(server, 'install_failed');
    expect((await rename(owner.token, server, { name: 'nope' })).statusCode).toBe(409);
    expect((await row(server)).name).toBe('by subuser');
  });

  it("sets the image to one of the egg's: 204, stored, server:startup.image logged", async () => {
    const { egg } = await makeEgg(h);
    const { owner, server: plain } = await h.make.ownedServer();
    const server = await useEgg(h, plain, egg, JAVA_17);
    const response = await setImage(owner.token, server, { docker_image: JAVA_21 });
    expect(response.statusCode).toBe(204);
    expect((await row(server)).image).toBe(JAVA_21);
    expect((await setImage(owner.token, server, { docker_image: JAVA_21 })).statusCode).toBe(204);
    expect(await eventsOf(h, server)).toEqual([
      { event: 'server:startup.image', actor_id: owner.user.id, properties: { old: JAVA_17, new: JAVA_21 } },
    ]);
    const shown = (await h.request(owner.token, { method: 'GET', url: `/api/client/servers/${server.uuid_short}` })).json();
    expect(shown.attributes.docker_image).toBe(JAVA_21);
  });

  it("refuses an image outside the egg's list (422 in), an admin-set image and a server without an egg (400)", async () => {
    const { egg } = await makeEgg(h);
    const { owner, server: plain } = await h.make.ownedServer();
    const server = await useEgg(h, plain, egg, JAVA_17);
    const outside = await setImage(owner.token, server, { docker_image: 'debian:bookworm' });
    expect(outside.statusCode).toBe(422);
    expect(outside.json().errors[0]).toMatchObject({ meta: { source_field: 'docker_image', rule: 'in' } });
    const missing = await setImage(owner.token, server, {});
    expect(missing.json().errors[0]).toMatchObject({ meta: { source_field: 'docker_image', rule: 'required' } });

    const manual = "This server's Docker image has been manually set by an administrator and cannot be updated.";
    await h.db.db.updateTable('servers').set({ image: 'custom:admin' }).where('id', '=', server.id).execute();
    const adminSet = await setImage(owner.token, server, { docker_image: JAVA_21 });
    expect(adminSet.statusCode).toBe(400);
    expect(adminSet.json()).toEqual({ errors: [{ code: 'BadRequestHttpException', status: '400', detail: manual }] });
    expect((await row(server)).image).toBe('custom:admin');

    const noEgg = await h.make.ownedServer();
    const refused = await setImage(noEgg.owner.token, noEgg.server, { docker_image: JAVA_21 });
    expect(refused.statusCode).toBe(400);
    expect((await row(noEgg.server)).image).toBeNull();
    expect(await eventsOf(h, server)).toEqual([]);
  });

  it('needs startup.docker-image', async () => {
    const { egg } = await makeEgg(h);
    const { server: plain } = await h.make.ownedServer();
    const server = await useEgg(h, plain, egg, null);
    const without = await h.make.subuser(server, ['startup.read', 'startup.update', 'settings.rename']);
    expect((await setImage(without.token, server, { docker_image: JAVA_21 })).statusCode).toBe(403);
    const holder = await h.make.subuser(server, ['startup.docker-image']);
    // An egg server that never had an image set (null: `host`) may pick one of the egg's.
    expect((await setImage(holder.token, server, { docker_image: JAVA_21 })).statusCode).toBe(204);
    expect(await eventsOf(h, server)).toEqual([
      { event: 'server:startup.image', actor_id: holder.user.id, properties: { old: null, new: JAVA_21 } },
    ]);
  });
});
