import { randomInt } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AllocationRow, ServerRow, TaskRow } from '../../src/db/schema.js';
import type { DaemonServer, PowerSignal } from '../../src/daemon/daemon.js';
import { activeRunOf } from '../../src/scheduler/runs.js';
import { performTask } from '../../src/scheduler/task-actions.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { eventsOf, makeSchedule, useSchedulerHarness, waitForRunEnd } from '../scheduler/helpers.js';
import { connected, eventually, useLiveHarness } from '../websocket/helpers.js';

/**
 * A server's allocations through the client API (docs/reference/network-and-allocations.md, Pterodactyl's
 * NetworkAllocationController): shapes, permissions, limits, the primary's
 * rules, activity entries, the server object, and every door that starts a
 * server handing the daemon its allocations, primary first.
 */
describeEachDatabase('network allocations', (database) => {
  const h = useLiveHarness(database);
  afterEach(async () => {
    vi.restoreAllMocks();
    await h.jobs.idle();
  });

  const base = (server: ServerRow) => `/api/client/servers/${server.uuid_short}/network/allocations`;
  const get = (token: string, url: string) => h.request(token, { method: 'GET', url });
  const post = (token: string, url: string, payload?: unknown) =>
    h.request(token, { method: 'POST', url, ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
  const del = (token: string, url: string) => h.request(token, { method: 'DELETE', url });

  /** An address no other test uses: allocations are one pool per database, shared by the file's tests. */
  const freshIp = () => `10.${randomInt(0, 256)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;

  /** Free allocations on `ip`, as allocation:add makes them (rows in port order). */
  async function pool(ip: string, ports: number[], alias: string | null = null): Promise<AllocationRow[]> {
    const now = h.clock.now();
    await h.db.db
      .insertInto('allocations')
      .values(
        ports.map((port) => ({ ip, port, ip_alias: alias, server_id: null, notes: null, created_at: now, updated_at: now })),
      )
      .execute();
    return h.db.db.selectFrom('allocations').selectAll().where('ip', '=', ip).orderBy('port').execute();
  }

  /** Gives `rows` to `server`, the first its primary, and sets its allocation limit. */
  async function give(server: ServerRow, rows: AllocationRow[], limit: number): Promise<ServerRow> {
    for (const row of rows)
      await h.db.db.updateTable('allocations').set({ server_id: server.id }).where('id', '=', row.id).execute();
    await h.db.db
      .updateTable('servers')
      .set({ allocation_id: rows[0]?.id ?? null, allocation_limit: limit })
      .where('id', '=', server.id)
      .execute();
    return h.db.db.selectFrom('servers').selectAll().where('id', '=', server.id).executeTakeFirstOrThrow();
  }

  /** An owner with a server holding `held` allocations on a fresh IP (the first its primary), `free` more free there. */
  async function serverWith(opts: { held: number; free?: number; limit: number; startup?: string }) {
    const ip = freshIp();
    const first = randomInt(2000, 60000);
    const ports = Array.from({ length: opts.held + (opts.free ?? 0) }, (_, i) => first + i);
    const rows = await pool(ip, ports);
    const { owner, server } = await h.make.ownedServer(opts.startup ? { startup: opts.startup } : {});
    const updated = await give(server, rows.slice(0, opts.held), opts.limit);
    return { owner, server: updated, ip, held: rows.slice(0, opts.held), free: rows.slice(opts.held) };
  }

  async function events(server: ServerRow) {
    const rows = await h.db.db.selectFrom('activity_logs').selectAll().where('server_id', '=', server.id).orderBy('id').execute();
    return rows.map((r) => ({ event: r.event, actor_id: r.actor_id, properties: JSON.parse(r.properties) as unknown }));
  }

  const row = (id: number) => h.db.db.selectFrom('allocations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const serverRow = (server: ServerRow) =>
    h.db.db.selectFrom('servers').selectAll().where('id', '=', server.id).executeTakeFirstOrThrow();

  const attributes = (allocation: AllocationRow, isDefault: boolean) => ({
    id: allocation.id,
    ip: allocation.ip,
    ip_alias: allocation.ip_alias,
    port: allocation.port,
    notes: allocation.notes,
    is_default: isDefault,
  });

  it("lists the server's allocations in Pterodactyl's shape, in the order given, the primary marked", async () => {
    const { owner, server, held } = await serverWith({ held: 3, free: 2, limit: 5 });
    await h.db.db
      .updateTable('allocations')
      .set({ notes: 'query port', ip_alias: 'play.example.test' })
      .where('id', '=', held[2]!.id)
      .execute();
    // Another server's allocations never show.
    await serverWith({ held: 2, limit: 2 });

    const res = await get(owner.token, base(server));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      object: 'list',
      data: [
        { object: 'allocation', attributes: attributes(held[0]!, true) },
        { object: 'allocation', attributes: attributes(held[1]!, false) },
        {
          object: 'allocation',
          attributes: { ...attributes(held[2]!, false), notes: 'query port', ip_alias: 'play.example.test' },
        },
      ],
    });
  });

  it('lists nothing for a server without allocations', async () => {
    const { owner, server } = await h.make.ownedServer();
    expect((await get(owner.token, base(server))).json()).toEqual({ object: 'list', data: [] });
  });

  it('gives a free allocation on the primary IP, lowest port first, and logs it with the change', async () => {
    const { owner, server, ip, free } = await serverWith({ held: 1, free: 2, limit: 3 });
    // A free allocation on another IP with a lower port is not the primary's.
    await pool(freshIp(), [1500 + randomInt(0, 100)]);

    const res = await post(owner.token, base(server));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ object: 'allocation', attributes: attributes(free[0]!, false) });
    expect(await row(free[0]!.id)).toMatchObject({ server_id: server.id, ip });
    expect(await events(server)).toEqual([
      { event: 'server:allocation.create', actor_id: owner.user.id, properties: { allocation: `${ip}:${free[0]!.port}` } },
    ]);
    const second = await post(owner.token, base(server));
    expect(second.json().attributes.port).toBe(free[1]!.port);
  });

  it("refuses past the server's allocation limit with Pterodactyl's 400, and 0 forbids any", async () => {
    const full = await serverWith({ held: 2, free: 2, limit: 2 });
    const res = await post(full.owner.token, base(full.server));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      errors: [
        {
          code: 'DisplayException',
          status: '400',
          detail: 'Cannot assign additional allocations to this server: limit has been reached.',
        },
      ],
    });
    const none = await serverWith({ held: 1, free: 2, limit: 0 });
    expect((await post(none.owner.token, base(none.server))).statusCode).toBe(400);
    expect(
      await h.db.db.selectFrom('allocations').select('id').where('server_id', 'in', [full.server.id, none.server.id]).execute(),
    ).toHaveLength(3);
    expect(await events(full.server)).toEqual([]);
  });

  it('answers 400 when no allocation on the primary IP is free', async () => {
    const { owner, server } = await serverWith({ held: 1, free: 0, limit: 4 });
    await pool(freshIp(), [3000 + randomInt(0, 1000)]);
    const res = await post(owner.token, base(server));
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0]).toEqual({
      code: 'DisplayException',
      status: '400',
      detail: 'Cannot assign additional allocation: no more space available on node.',
    });
    expect(await events(server)).toEqual([]);
  });

  it('gives a server without a primary the first free allocation, which becomes its primary', async () => {
    const { owner, server } = await h.make.ownedServer();
    await give(server, [], 1);
    await pool(freshIp(), [4000 + randomInt(0, 1000)]);
    const first = await h.db.db
      .selectFrom('allocations')
      .selectAll()
      .where('server_id', 'is', null)
      .orderBy('id')
      .executeTakeFirstOrThrow();
    const res = await post(owner.token, base(server));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().attributes).toEqual(attributes(first, true));
    expect((await serverRow(server)).allocation_id).toBe(first.id);
  });

  it('never passes the limit nor gives one allocation twice, however many ask at once', async () => {
    const a = await serverWith({ held: 1, free: 30, limit: 3 });
    const b = await h.make.server(a.owner.user);
    // b shares a's IP: both compete for the same free allocations.
    const bPrimary = a.free.pop()!;
    const bServer = await give(b, [bPrimary], 4);
    const answers = await Promise.all([
      ...Array.from({ length: 15 }, () => post(a.owner.token, base(a.server))),
      ...Array.from({ length: 15 }, () => post(a.owner.token, base(bServer))),
    ]);
    const ok = answers.filter((r) => r.statusCode === 200);
    expect(answers.filter((r) => r.statusCode === 400)).toHaveLength(answers.length - ok.length);
    const ids = ok.map((r) => r.json().attributes.id as number);
    expect(new Set(ids).size).toBe(ids.length);
    const heldByA = await h.db.db.selectFrom('allocations').select('id').where('server_id', '=', a.server.id).execute();
    const heldByB = await h.db.db.selectFrom('allocations').select('id').where('server_id', '=', bServer.id).execute();
    // Enough free for both: each reaches its limit exactly (a 3, b 4), and every other answer is the limit's 400.
    expect(heldByA).toHaveLength(3);
    expect(heldByB).toHaveLength(4);
    expect(ok).toHaveLength(2 + 3);
  });

  it('sets notes, logs old and new only when they change, and clears them with an empty value', async () => {
    const { owner, server, held, ip } = await serverWith({ held: 2, limit: 2 });
    const url = `${base(server)}/${held[1]!.id}`;
    const set = await post(owner.token, url, { notes: '  rcon  ' });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toEqual({ object: 'allocation', attributes: { ...attributes(held[1]!, false), notes: 'rcon' } });
    expect((await post(owner.token, url, { notes: 'rcon' })).statusCode).toBe(200);
    // null clears them as an empty string does (docs/reference/api.md#wire-conventions: both are "not given").
    expect((await post(owner.token, url, { notes: null })).json().attributes.notes).toBeNull();
    expect((await post(owner.token, url, { notes: 'rcon' })).statusCode).toBe(200);
    const cleared = await post(owner.token, url, { notes: '' });
    expect(cleared.json().attributes.notes).toBeNull();
    expect((await row(held[1]!.id)).notes).toBeNull();
    const name = `${ip}:${held[1]!.port}`;
    expect(await events(server)).toEqual([
      { event: 'server:allocation.notes', actor_id: owner.user.id, properties: { allocation: name, old: null, new: 'rcon' } },
      { event: 'server:allocation.notes', actor_id: owner.user.id, properties: { allocation: name, old: 'rcon', new: null } },
      { event: 'server:allocation.notes', actor_id: owner.user.id, properties: { allocation: name, old: null, new: 'rcon' } },
      { event: 'server:allocation.notes', actor_id: owner.user.id, properties: { allocation: name, old: 'rcon', new: null } },
    ]);
  });

  it("shows the entries in the activity log with Pterodactyl's properties, none of them additional metadata", async () => {
    const { owner, server, held, free, ip } = await serverWith({ held: 2, free: 1, limit: 3 });
    await post(owner.token, base(server));
    await post(owner.token, `${base(server)}/${held[1]!.id}`, { notes: 'rcon' });
    await post(owner.token, `${base(server)}/${held[1]!.id}/primary`);
    await del(owner.token, `${base(server)}/${held[0]!.id}`);
    const res = await get(owner.token, `/api/client/servers/${server.uuid_short}/activity?sort=timestamp`);
    expect(res.statusCode).toBe(200);
    const entries = (res.json().data as { attributes: Record<string, unknown> }[]).map((d) => [
      d.attributes.event,
      d.attributes.properties,
      d.attributes.has_additional_metadata,
    ]);
    expect(entries).toEqual([
      ['server:allocation.create', { allocation: `${ip}:${free[0]!.port}` }, false],
      ['server:allocation.notes', { allocation: `${ip}:${held[1]!.port}`, old: null, new: 'rcon' }, false],
      ['server:allocation.primary', { allocation: `${ip}:${held[1]!.port}` }, false],
      ['server:allocation.delete', { allocation: `${ip}:${held[0]!.port}` }, false],
    ]);
  });

  it('refuses notes over 256 characters or not a string (422), changing nothing', async () => {
    const { owner, server, held } = await serverWith({ held: 1, limit: 1 });
    const url = `${base(server)}/${held[0]!.id}`;
    const long = await post(owner.token, url, { notes: 'x'.repeat(257) });
    expect(long.statusCode).toBe(422);
    expect(long.json().errors[0]).toMatchObject({ code: 'ValidationException', meta: { source_field: 'notes', rule: 'max' } });
    expect((await post(owner.token, url, { notes: 12 })).statusCode).toBe(422);
    const notJson = await h.request(owner.token, {
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json' },
      payload: '[1]',
    });
    expect(notJson.statusCode).toBe(400);
    expect(notJson.json().errors[0].code).toBe('BadRequestHttpException');
    expect((await post(owner.token, url, { notes: 'y'.repeat(256) })).statusCode).toBe(200);
    expect(await events(server)).toHaveLength(1);
  });

  it('makes another allocation the primary, logged, and the server object and list show it', async () => {
    const { owner, server, held, ip } = await serverWith({ held: 2, limit: 2 });
    const res = await post(owner.token, `${base(server)}/${held[1]!.id}/primary`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ object: 'allocation', attributes: attributes(held[1]!, true) });
    expect((await serverRow(server)).allocation_id).toBe(held[1]!.id);
    const listed = (await get(owner.token, base(server)))
      .json()
      .data.map((d: { attributes: { is_default: boolean } }) => d.attributes.is_default);
    expect(listed).toEqual([false, true]);
    expect(await events(server)).toEqual([
      { event: 'server:allocation.primary', actor_id: owner.user.id, properties: { allocation: `${ip}:${held[1]!.port}` } },
    ]);
  });

  it('removes an allocation (204): freed, notes cleared, logged; never the primary, nor with no allocation limit', async () => {
    const { owner, server, held, ip } = await serverWith({ held: 2, limit: 2 });
    await h.db.db.updateTable('allocations').set({ notes: 'old' }).where('id', '=', held[1]!.id).execute();

    const primary = await del(owner.token, `${base(server)}/${held[0]!.id}`);
    expect(primary.statusCode).toBe(400);
    expect(primary.json().errors[0]).toEqual({
      code: 'DisplayException',
      status: '400',
      detail: 'You cannot delete the primary allocation for this server.',
    });

    const res = await del(owner.token, `${base(server)}/${held[1]!.id}`);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(await row(held[1]!.id)).toMatchObject({ server_id: null, notes: null });
    expect((await get(owner.token, base(server))).json().data).toHaveLength(1);
    expect(await events(server)).toEqual([
      { event: 'server:allocation.delete', actor_id: owner.user.id, properties: { allocation: `${ip}:${held[1]!.port}` } },
    ]);
    // Gone from the server: addressing it again is a 404.
    expect((await del(owner.token, `${base(server)}/${held[1]!.id}`)).statusCode).toBe(404);

    const fixed = await serverWith({ held: 2, limit: 0 });
    const refused = await del(fixed.owner.token, `${base(fixed.server)}/${fixed.held[1]!.id}`);
    expect(refused.statusCode).toBe(400);
    expect(refused.json().errors[0].detail).toBe('You cannot delete allocations for this server: no allocation limit is set.');
  });

  it('needs allocation.read, .create, .update and .delete of a subuser (403), and the owner or an admin needs none', async () => {
    const { owner, server, held } = await serverWith({ held: 2, free: 1, limit: 3 });
    const nobody = await h.make.subuser(server, ['control.console']);
    const one = `${base(server)}/${held[1]!.id}`;
    expect((await get(nobody.token, base(server))).statusCode).toBe(403);
    expect((await post(nobody.token, base(server))).statusCode).toBe(403);
    // 403 before the body is looked at (docs/reference/api.md#errors's order).
    expect((await post(nobody.token, one, { notes: 'x'.repeat(300) })).statusCode).toBe(403);
    expect((await post(nobody.token, `${one}/primary`)).statusCode).toBe(403);
    expect((await del(nobody.token, one)).statusCode).toBe(403);

    const reader = await h.make.subuser(server, ['allocation.read']);
    expect((await get(reader.token, base(server))).statusCode).toBe(200);
    expect((await post(reader.token, base(server))).statusCode).toBe(403);
    expect((await post(reader.token, one, { notes: 'n' })).statusCode).toBe(403);

    const editor = await h.make.subuser(server, ['allocation.create', 'allocation.update', 'allocation.delete']);
    expect((await post(editor.token, one, { notes: 'n' })).statusCode).toBe(200);
    expect((await post(editor.token, `${one}/primary`)).statusCode).toBe(200);
    expect((await post(editor.token, base(server))).statusCode).toBe(200);
    expect((await del(editor.token, `${base(server)}/${held[0]!.id}`)).statusCode).toBe(204);

    const admin = await h.make.user({ admin: true });
    expect((await get(admin.token, base(server))).statusCode).toBe(200);
    expect((await get(owner.token, base(server))).statusCode).toBe(200);
  });

  it("answers 404 for another user's server, and for an allocation that is not this server's, before any 403", async () => {
    const mine = await serverWith({ held: 2, limit: 2 });
    const theirs = await serverWith({ held: 2, limit: 2 });
    expect((await get(mine.owner.token, base(theirs.server))).statusCode).toBe(404);
    expect((await post(mine.owner.token, base(theirs.server))).statusCode).toBe(404);
    const foreign = `${base(mine.server)}/${theirs.held[1]!.id}`;
    expect((await post(mine.owner.token, foreign, { notes: 'x' })).statusCode).toBe(404);
    expect((await post(mine.owner.token, `${foreign}/primary`)).statusCode).toBe(404);
    expect((await del(mine.owner.token, foreign)).statusCode).toBe(404);
    const free = (await pool(freshIp(), [5000 + randomInt(0, 1000)]))[0]!;
    expect((await del(mine.owner.token, `${base(mine.server)}/${free.id}`)).statusCode).toBe(404);
    for (const id of ['0', 'abc', '99999999999', '2147483648', '-1', '1.5']) {
      expect((await del(mine.owner.token, `${base(mine.server)}/${id}`)).statusCode, id).toBe(404);
    }
    const nobody = await h.make.subuser(mine.server, []);
    expect((await del(nobody.token, foreign)).statusCode).toBe(404);
    expect(await row(theirs.held[1]!.id)).toMatchObject({ server_id: theirs.server.id });
    expect((await serverRow(theirs.server)).allocation_id).toBe(theirs.held[0]!.id);
  });

  it('refuses every allocation route on a suspended server (409) and changes while it installs', async () => {
    const suspended = await serverWith({ held: 1, free: 1, limit: 2 });
    await h.make.setStatus(suspended.server, 'suspended');
    expect((await get(suspended.owner.token, base(suspended.server))).statusCode).toBe(409);
    expect((await post(suspended.owner.token, base(suspended.server))).statusCode).toBe(409);
    const installing = await serverWith({ held: 1, free: 1, limit: 2 });
    await h.make.setStatus(installing.server, 'installing');
    expect((await get(installing.owner.token, base(installing.server))).statusCode).toBe(200);
    expect((await post(installing.owner.token, base(installing.server))).statusCode).toBe(409);
  });

  it('shows them in the server object: relationships.allocations and feature_limits.allocations', async () => {
    const { owner, server, held } = await serverWith({ held: 2, limit: 7 });
    await h.db.db.updateTable('allocations').set({ notes: 'secret' }).where('id', '=', held[0]!.id).execute();
    const shown = (await get(owner.token, `/api/client/servers/${server.uuid_short}`)).json().attributes;
    expect(shown.feature_limits).toEqual({ databases: 0, allocations: 7, backups: 10 });
    expect(shown.relationships.allocations).toEqual({
      object: 'list',
      data: [
        { object: 'allocation', attributes: { ...attributes(held[0]!, true), notes: 'secret' } },
        { object: 'allocation', attributes: attributes(held[1]!, false) },
      ],
    });
    expect(shown.sftp_details).toEqual({ ip: '127.0.0.1', port: 2022 });

    const listed = (await get(owner.token, '/api/client?per_page=100')).json().data as { attributes: Record<string, any> }[];
    const inList = listed.find((s) => s.attributes.uuid === server.uuid)!.attributes;
    expect(inList.relationships.allocations).toEqual(shown.relationships.allocations);
    expect(inList.feature_limits.allocations).toBe(7);
  });

  it('shows a subuser without allocation.read only the primary, without its notes (as Pterodactyl)', async () => {
    const { server, held } = await serverWith({ held: 2, limit: 2 });
    await h.db.db.updateTable('allocations').set({ notes: 'secret' }).where('id', '=', held[0]!.id).execute();
    const sub = await h.make.subuser(server, ['control.console']);
    const expected = {
      object: 'list',
      data: [{ object: 'allocation', attributes: { ...attributes(held[0]!, true), notes: null } }],
    };
    const shown = (await get(sub.token, `/api/client/servers/${server.uuid_short}`)).json().attributes;
    expect(shown.relationships.allocations).toEqual(expected);
    const listed = (await get(sub.token, '/api/client')).json().data as { attributes: Record<string, any> }[];
    expect(listed.find((s) => s.attributes.uuid === server.uuid)!.attributes.relationships.allocations).toEqual(expected);

    const reader = await h.make.subuser(server, ['allocation.read']);
    const all = (await get(reader.token, '/api/client')).json().data as { attributes: Record<string, any> }[];
    expect(all.find((s) => s.attributes.uuid === server.uuid)!.attributes.relationships.allocations.data).toHaveLength(2);
  });

  describe('every door that starts a server', () => {
    /** The daemon's power calls, recorded on their way to the real local daemon. */
    function recordPower() {
      const calls: { server: DaemonServer; signal: PowerSignal }[] = [];
      const real = h.daemon.power.bind(h.daemon);
      vi.spyOn(h.daemon, 'power').mockImplementation(async (server, signal) => {
        calls.push({ server, signal });
        return real(server, signal);
      });
      return calls;
    }

    /** A server with three allocations whose primary is the second given, so that "primary first" is not the id order. */
    async function startable() {
      const made = await serverWith({ held: 3, limit: 3, startup: 'sleep 30' });
      await h.db.db.updateTable('servers').set({ allocation_id: made.held[1]!.id }).where('id', '=', made.server.id).execute();
      const server = await serverRow(made.server);
      const expected = [made.held[1]!, made.held[0]!, made.held[2]!].map((a) => ({ ip: a.ip, port: a.port }));
      return { ...made, server, expected };
    }

    async function stop(server: ServerRow) {
      await h.daemon.power({ uuid: server.uuid, startup: server.startup, stopCommand: null }, 'kill');
      await eventually(
        async () => (await h.daemon.state({ uuid: server.uuid, startup: null, stopCommand: null })) === 'offline',
        10_000,
      );
    }

    it('a start through POST /power hands the daemon the allocations, primary first', async () => {
      const { owner, server, expected } = await startable();
      const calls = recordPower();
      const res = await post(owner.token, `/api/client/servers/${server.uuid_short}/power`, { signal: 'start' });
      expect(res.statusCode, res.body).toBe(204);
      expect(calls).toHaveLength(1);
      expect(calls[0]!.server.allocations).toEqual(expected);
      await stop(server);
    });

    it("a start through the websocket's set state hands the daemon the allocations, primary first", async () => {
      const { owner, server, expected } = await startable();
      const calls = recordPower();
      const socket = await connected(h, owner.token, server);
      try {
        socket.send('set state', ['start']);
        await eventually(() => calls.length > 0, 10_000, 'a power call');
        expect(calls[0]!.signal).toBe('start');
        expect(calls[0]!.server.allocations).toEqual(expected);
      } finally {
        socket.close();
      }
      await stop(server);
    });

    it("a schedule's power task hands the daemon the allocations as they are now, primary first", async () => {
      const { server, expected, held } = await startable();
      // What a claimed run carries: no limits, no allocations; the task reads them.
      const run = activeRunOf(
        { id: 1, run_number: 1, name: 'start', server_id: server.id, run_cursor: 0, run_step_at: null } as never,
        { server_uuid: server.uuid, server_startup: server.startup, server_stop_command: null },
        h.clock.now(),
      );
      // A change after the run was claimed counts: the primary moves back to the first.
      await h.db.db.updateTable('servers').set({ allocation_id: held[0]!.id }).where('id', '=', server.id).execute();
      const calls = recordPower();
      const task = { id: 1, schedule_id: 1, sequence_id: 1, action: 'power', payload: 'start' } as TaskRow;
      const outcome = await performTask(h.deps, run.server, task);
      expect(outcome).toEqual({ ok: true, event: { event: 'server:power.start', properties: {} } });
      expect(calls[0]!.server.allocations).toEqual([expected[1], expected[0], expected[2]]);
      await stop(server);
    });

    it('a server without allocations is started with none', async () => {
      const { owner, server } = await h.make.ownedServer({ startup: 'sleep 30' });
      const calls = recordPower();
      expect((await post(owner.token, `/api/client/servers/${server.uuid_short}/power`, { signal: 'start' })).statusCode).toBe(
        204,
      );
      expect(calls[0]!.server.allocations).toEqual([]);
      await stop(server);
    });
  });
});

/** The third door end to end: a due schedule claimed and run by the real scheduler. */
describeEachDatabase("a schedule's power task hands the daemon the allocations", (database) => {
  const h = useSchedulerHarness(database);
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('as they are when the task runs, primary first', async () => {
    const { server } = await h.make.ownedServer({ startup: 'sleep 30' });
    const now = h.clock.now();
    const rows = await h.db.db
      .insertInto('allocations')
      .values(
        [27015, 27016].map((port) => ({
          ip: '10.1.2.3',
          port,
          ip_alias: null,
          server_id: server.id,
          notes: null,
          created_at: now,
          updated_at: now,
        })),
      )
      .returningAll()
      .execute();
    const second = rows.find((r) => r.port === 27016)!;
    await h.db.db.updateTable('servers').set({ allocation_id: second.id }).where('id', '=', server.id).execute();
    const calls: DaemonServer[] = [];
    const real = h.daemon.power.bind(h.daemon);
    vi.spyOn(h.daemon, 'power').mockImplementation(async (target, signal) => {
      calls.push(target);
      return real(target, signal);
    });
    const schedule = await makeSchedule(h.db.db, server, {
      nextRunAt: Date.now() - 1_000,
      tasks: [{ action: 'power', payload: 'start' }],
    });
    await h.scheduler().tick();
    await waitForRunEnd(h.db.db, schedule.id);
    expect(calls.map((c) => c.allocations)).toEqual([
      [
        { ip: '10.1.2.3', port: 27016 },
        { ip: '10.1.2.3', port: 27015 },
      ],
    ]);
    expect((await eventsOf(h.db.db, server.id)).map((e) => e.event)).toContain('server:power.start');
    await real({ uuid: server.uuid, startup: server.startup, stopCommand: null }, 'kill');
  });
});
