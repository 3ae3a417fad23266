import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';

/**
 * GET /api/client's `type`, `filter[...]`, `sort` and `include` (docs/reference/accounts.md,
 * Pterodactyl's ClientController). Each test works on servers named with a
 * marker of its own, so the database's other servers never match.
 */
describeEachDatabase('server list filters', (database) => {
  const h = useHarness(database);
  type Listed = { attributes: { uuid: string; name: string; relationships: Record<string, unknown> } };
  const list = async (token: string, query: string) => {
    const res = await h.request(token, { method: 'GET', url: `/api/client?per_page=100&${query}` });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ data: Listed[]; meta: { pagination: { total: number } } }>();
  };
  const names = async (token: string, query: string) => (await list(token, query)).data.map((s) => s.attributes.name).sort();

  it('type: default is owned or shared, owner is owned, admin and admin-all are for root admins only', async () => {
    const marker = `t${Date.now().toString(36)}`;
    const alice = await h.make.user();
    const admin = await h.make.user({ admin: true });
    const own = await h.make.server(alice.user, { name: `${marker} own` });
    const bob = await h.make.user();
    const shared = await h.make.server(bob.user, { name: `${marker} shared` });
    await h.make.server(bob.user, { name: `${marker} other` });
    await h.make.server(admin.user, { name: `${marker} admins` });
    await h.make.subuser(shared, ['control.start']).then(async (sub) => {
      await h.db.db.updateTable('subusers').set({ user_id: alice.user.id }).where('user_id', '=', sub.user.id).execute();
    });
    await h.db.db
      .insertInto('subusers')
      .values({ server_id: shared.id, user_id: admin.user.id, permissions: '[]', created_at: 0 })
      .execute();
    const f = `filter[name]=${marker}`;
    expect(await names(alice.token, f)).toEqual([`${marker} own`, `${marker} shared`]);
    expect(await names(alice.token, `${f}&type=owner`)).toEqual([`${marker} own`]);
    expect(await names(alice.token, `${f}&type=admin`)).toEqual([]);
    expect(await names(alice.token, `${f}&type=admin-all`)).toEqual([]);
    expect(await names(alice.token, `${f}&type=nonsense`)).toEqual([`${marker} own`, `${marker} shared`]);
    // A root admin no longer gets every server unasked.
    expect(await names(admin.token, f)).toEqual([`${marker} admins`, `${marker} shared`]);
    expect(await names(admin.token, `${f}&type=owner`)).toEqual([`${marker} admins`]);
    expect(await names(admin.token, `${f}&type=admin`)).toEqual([`${marker} other`, `${marker} own`]);
    expect(await names(admin.token, `${f}&type=admin-all`)).toEqual([
      `${marker} admins`,
      `${marker} other`,
      `${marker} own`,
      `${marker} shared`,
    ]);
    expect((await list(admin.token, `${f}&type=admin-all`)).meta.pagination.total).toBe(4);
    expect(own.owner_id).toBe(alice.user.id);
  });

  it('filters by uuid, name (parts, any case, commas as alternatives), external_id and *', async () => {
    const marker = `f${Date.now().toString(36)}`;
    const { owner, server: alpha } = await h.make.ownedServer({ name: `${marker} Alpha_1` });
    const beta = await h.make.server(owner.user, { name: `${marker} beta%` });
    const allocation = { ip: '10.250.1.2', port: 25565, ip_alias: null, notes: null, created_at: 0, updated_at: 0 };
    await h.db.db
      .insertInto('allocations')
      .values({ ...allocation, port: 25000 + (alpha.id % 500), server_id: beta.id })
      .execute();
    const port = 25000 + (alpha.id % 500);

    expect(await names(owner.token, `filter[name]=${marker.toUpperCase()} alpha`)).toEqual([`${marker} Alpha_1`]);
    expect(await names(owner.token, `filter[name]=${marker} alpha,${marker} BETA`)).toEqual([
      `${marker} Alpha_1`,
      `${marker} beta%`,
    ]);
    // LIKE's wildcards are literal characters in a filter.
    expect(await names(owner.token, `filter[name]=${marker} beta%25`)).toEqual([`${marker} beta%`]);
    expect(await names(owner.token, `filter[name]=${marker}%25`)).toEqual([]);
    expect(await names(owner.token, `filter[name]=${marker} Alpha%5F1`)).toEqual([`${marker} Alpha_1`]);
    expect(await names(owner.token, `filter[name]=${marker} Alpha__`)).toEqual([]);
    expect(await names(owner.token, `filter[uuid]=${alpha.uuid.slice(4, 20).toUpperCase()}`)).toEqual([`${marker} Alpha_1`]);
    expect(await names(owner.token, `filter[external_id]=${alpha.uuid}`)).toEqual([]);
    expect(await names(owner.token, `filter[*]=${alpha.uuid_short}`)).toEqual([`${marker} Alpha_1`]);
    expect(await names(owner.token, `filter[*]=${alpha.uuid.slice(0, 12)}`)).toEqual([`${marker} Alpha_1`]);
    expect(await names(owner.token, `filter[*]=${marker} ALPHA`)).toEqual([`${marker} Alpha_1`]);
    expect(await names(owner.token, `filter[*]=10.250.1.2:${port}`)).toEqual([`${marker} beta%`]);
    expect(await names(owner.token, `filter[*]=:${port}`)).toEqual([`${marker} beta%`]);
    expect(await names(owner.token, `filter[*]=10.250.1.3`)).toEqual([]);
    expect(await names(owner.token, `filter[name]=${marker}&sort=-name`)).toEqual([`${marker} Alpha_1`, `${marker} beta%`]);
    const sorted = (await list(owner.token, `filter[name]=${marker}&sort=-name`)).data.map((s) => s.attributes.name);
    expect(sorted).toEqual([`${marker} beta%`, `${marker} Alpha_1`].sort().reverse());

    const badFilter = await h.request(owner.token, { method: 'GET', url: '/api/client?filter[owner]=x' });
    expect(badFilter.statusCode).toBe(400);
    expect(badFilter.json().errors[0]).toMatchObject({
      code: 'InvalidFilterQuery',
      detail: 'Requested filter(s) `owner` are not allowed. Allowed filter(s) are `uuid, name, external_id, *`.',
    });
    const badSort = await h.request(owner.token, { method: 'GET', url: '/api/client?sort=memory' });
    expect(badSort.statusCode).toBe(400);
    expect(badSort.json().errors[0].code).toBe('InvalidSortQuery');
  });

  it('include=egg,subusers adds the relationships, subusers only for who holds user.read', async () => {
    const marker = `i${Date.now().toString(36)}`;
    const { owner, server } = await h.make.ownedServer({ name: `${marker} s` });
    const reader = await h.make.subuser(server, ['user.read']);
    const plain = await h.make.subuser(server, ['control.start']);
    const one = async (token: string, include: string) =>
      (await list(token, `filter[name]=${marker}&include=${include}`)).data[0]!;

    const full = await one(owner.token, 'egg,subusers,unknown');
    expect(full.attributes.relationships.egg).toEqual({ object: 'null_resource', attributes: null });
    const subusers = full.attributes.relationships.subusers as { object: string; data: { attributes: { uuid: string } }[] };
    expect(subusers.object).toBe('list');
    expect(subusers.data.map((s) => s.attributes.uuid).sort()).toEqual([reader.user.uuid, plain.user.uuid].sort());
    expect((await one(reader.token, 'subusers')).attributes.relationships.subusers).toEqual(subusers);
    expect((await one(plain.token, 'subusers')).attributes.relationships.subusers).toEqual({
      object: 'null_resource',
      attributes: null,
    });
    const bare = await one(owner.token, '');
    expect(Object.keys(bare.attributes.relationships).sort()).toEqual(['allocations', 'variables']);

    const egg = { uuid: randomUUID(), name: `${marker} egg` };
    const { id: eggId } = await h.db.db
      .insertInto('eggs')
      .values({
        ...egg,
        docker_images: '{}',
        startup: 'true',
        config_stop: null,
        config_startup: '{}',
        config_files: '{}',
        file_denylist: '[]',
        features: '[]',
        created_at: 0,
        updated_at: 0,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await h.db.db.updateTable('servers').set({ egg_id: eggId }).where('id', '=', server.id).execute();
    expect((await one(owner.token, 'egg')).attributes.relationships.egg).toEqual({ object: 'egg', attributes: egg });
  });
});
