import { expect, it } from 'vitest';
import { recordActivities, SYSTEM_ACTOR, type ActivityEntry } from '../../src/modules/activity/activity.recorder.js';
import { pruneActivity, startActivityPruner } from '../../src/modules/activity/activity.pruner.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { useHarness } from '../helpers/harness.js';
import { waitFor } from '../scheduler/helpers.js';
import { expectActivityInvariants } from './helpers.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-06-01T00:00:00Z');

describeEachDatabase('activity pruning', (database) => {
  const h = useHarness(database, { ACTIVITY_PRUNE_DAYS: '7' });

  async function seed(serverId: number, ownerId: number, ages: number[]) {
    const entries: ActivityEntry[] = ages.map((age, i) => ({
      serverId,
      event: i % 2 === 0 ? `server:test.old-only-${age > 7 ? 'old' : 'new'}` : 'server:test.shared',
      actor: i % 3 === 0 ? SYSTEM_ACTOR : { userId: ownerId, apiKeyId: 1, ip: `10.0.0.${i % 5}` },
      timestamp: NOW - age * DAY,
    }));
    await recordActivities(h.db.db, entries);
  }

  async function listing(token: string, uuid: string, query = '') {
    const res = await h.request(token, { method: 'GET', url: `/api/client/servers/${uuid}/activity?${query}` });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }

  it('deletes entries older than ACTIVITY_PRUNE_DAYS, oldest first, and moves every count with them', async () => {
    const { owner, server } = await h.make.ownedServer();
    const fresh = await h.make.server(owner.user);
    // 30 entries from 30 days ago to today, oldest first.
    await seed(
      server.id,
      owner.user.id,
      Array.from({ length: 30 }, (_, i) => 29 - i),
    );
    await seed(fresh.id, owner.user.id, [3, 2, 1]);
    expect((await listing(owner.token, server.uuid)).meta.pagination.total).toBe(30);

    const deleted = await pruneActivity(h.deps, NOW, { batchSize: 4 });
    // Ages 29..8 go (22 entries); age 7 is exactly at the cutoff and stays.
    expect(deleted).toBe(22);
    await expectActivityInvariants(h.db.db);
    const body = await listing(owner.token, server.uuid, 'sort=timestamp&per_page=100');
    expect(body.meta.pagination.total).toBe(8);
    expect(body.data[0].attributes.timestamp).toBe(new Date(NOW - 7 * DAY).toISOString().slice(0, 19) + '+00:00');
    // A term whose entries are all gone leaves the vocabulary: its filter finds nothing.
    expect((await listing(owner.token, server.uuid, 'filter[event]=old-only-old')).meta.pagination.total).toBe(0);
    const terms = await h.db.db.selectFrom('activity_terms').select('term').where('server_id', '=', server.id).execute();
    expect(terms.map((t) => t.term)).not.toContain('server:test.old-only-old');
    expect((await listing(owner.token, server.uuid, 'filter[event]=shared')).meta.pagination.total).toBe(4);
    expect((await listing(owner.token, fresh.uuid)).meta.pagination.total).toBe(3);

    // Nothing more to do; new entries continue the log where it was.
    expect(await pruneActivity(h.deps, NOW)).toBe(0);
    await recordActivities(h.db.db, [
      { serverId: server.id, event: 'server:test.old-only-old', actor: SYSTEM_ACTOR, timestamp: NOW },
    ]);
    await expectActivityInvariants(h.db.db);
    const after = await listing(owner.token, server.uuid, 'filter[event]=old-only-old');
    expect(after.meta.pagination.total).toBe(1);
    const seqs = await h.db.db
      .selectFrom('activity_logs')
      .select('seq')
      .where('server_id', '=', server.id)
      .orderBy('seq')
      .execute();
    expect(seqs.map((r) => Number(r.seq))).toEqual(Array.from({ length: 9 }, (_, i) => 23 + i));

    // Everything old: the server's log empties, and starts again cleanly.
    expect(await pruneActivity(h.deps, NOW + 30 * DAY)).toBe(9 + 3);
    await expectActivityInvariants(h.db.db);
    expect((await listing(owner.token, server.uuid)).meta.pagination).toMatchObject({ total: 0, total_pages: 1 });
    await recordActivities(h.db.db, [
      { serverId: server.id, event: 'server:test.again', actor: SYSTEM_ACTOR, timestamp: NOW + 30 * DAY },
    ]);
    await expectActivityInvariants(h.db.db);
    expect(
      (await listing(owner.token, server.uuid)).data.map((d: { attributes: { event: string } }) => d.attributes.event),
    ).toEqual(['server:test.again']);
  });

  it('prunes in the background until stopped', async () => {
    const { owner, server } = await h.make.ownedServer();
    h.clock.set(NOW);
    await seed(server.id, owner.user.id, [40, 30, 20, 1]);
    const pruner = startActivityPruner(
      { ...h.deps, logger: { info: () => {}, error: () => {} } },
      { firstRunMs: 0, intervalMs: 20, batchSize: 2 },
    );
    await waitFor(
      async () => {
        const left = await h.db.db.selectFrom('activity_logs').select('id').where('server_id', '=', server.id).execute();
        return left.length === 1;
      },
      5000,
      'background pruning',
    );
    await pruner.stop();
    await expectActivityInvariants(h.db.db);
    // Stopped: old entries written now stay.
    await seed(server.id, owner.user.id, [0]);
    h.clock.set(NOW + 100 * DAY);
    await new Promise((r) => setTimeout(r, 80));
    expect((await h.db.db.selectFrom('activity_logs').select('id').where('server_id', '=', server.id).execute()).length).toBe(2);
  });
});
