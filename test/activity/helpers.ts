import { sql } from 'kysely';
import { expect } from 'vitest';
import type { Database } from '../../src/db/database.js';
import type { ActivityEntry, Actor } from '../../src/modules/activity/activity.recorder.js';
import type { ActivityListQuery, ActivityViewer } from '../../src/modules/activity/activity.types.js';
import { seeded } from '../../bench/lib/stats.js';

/**
 * The plain way to answer docs/reference/activity.md#listing — ORDER BY + OFFSET, COUNT(*), LIKE — that
 * the optimised listing must agree with on every input.
 */
export async function referenceListing(db: Database, serverId: number, viewer: ActivityViewer, q: ActivityListQuery) {
  const like = (value: string) => `%${value.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  let query = db.selectFrom('activity_logs').where('server_id', '=', serverId);
  if (q.event !== undefined) query = query.where(sql<boolean>`lower(event) like ${like(q.event)} escape '\\'`);
  if (q.ip !== undefined) {
    query = query.where(sql<boolean>`lower(ip) like ${like(q.ip)} escape '\\'`);
    if (!viewer.seesAllIps) query = query.where('actor_id', '=', viewer.userId);
  }
  if (q.actor === 'system') query = query.where('actor_id', 'is', null);
  else if (q.actor !== undefined) {
    const actor = q.actor;
    query = query.where('actor_id', '=', (eb) => eb.selectFrom('users').select('id').where('uuid', '=', actor));
  }
  const total = Number((await query.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const direction = q.ascending ? 'asc' : 'desc';
  const rows = await query
    .select('id')
    .orderBy('timestamp', direction)
    .orderBy('id', direction)
    .limit(q.perPage)
    .offset((q.page - 1) * q.perPage)
    .execute();
  return { total, ids: rows.map((r) => Number(r.id)) };
}

/**
 * Everything migration 002 promises, checked against the entries themselves
 * (`insertionOrder: false` for entries that predate it, ordered by timestamp):
 * per server a gapless seq range matching the counters and non-decreasing
 * timestamps along it; per term a gapless stream matching its total and
 * last_seq, in seq order; facet totals; no zero-total vocabulary rows.
 */
export async function expectActivityInvariants(db: Database, opts: { insertionOrder?: boolean } = {}) {
  const logs = await db
    .selectFrom('activity_logs')
    .select([
      'id',
      'server_id',
      'seq',
      'timestamp',
      'event',
      'ip',
      'actor_id',
      'event_term',
      'event_seq',
      'ip_term',
      'ip_seq',
      'actor_term',
      'actor_seq',
      'facet_id',
    ])
    .orderBy('server_id')
    .orderBy('seq')
    .execute();
  const counters = new Map((await db.selectFrom('activity_servers').selectAll().execute()).map((c) => [c.server_id, c]));
  const terms = new Map((await db.selectFrom('activity_terms').selectAll().execute()).map((t) => [t.id, t]));
  const facets = new Map((await db.selectFrom('activity_facets').selectAll().execute()).map((f) => [f.id, f]));

  const byServer = new Map<number, typeof logs>();
  for (const row of logs) {
    const list = byServer.get(row.server_id) ?? [];
    list.push(row);
    byServer.set(row.server_id, list);
  }
  for (const [serverId, counter] of counters) {
    const rows = byServer.get(serverId) ?? [];
    expect(Number(counter.total), `server ${serverId} total`).toBe(rows.length);
    if (rows.length > 0) expect(Number(counter.last_seq), `server ${serverId} last_seq`).toBe(Number(rows[rows.length - 1]!.seq));
    rows.forEach((row, i) => {
      expect(Number(row.seq), `server ${serverId} gapless`).toBe(Number(counter.last_seq) - rows.length + 1 + i);
      if (i > 0) {
        expect(Number(row.timestamp)).toBeGreaterThanOrEqual(Number(rows[i - 1]!.timestamp));
        // Entries the recorder wrote: insertion order (id) agrees with seq order.
        if (opts.insertionOrder !== false) expect(Number(row.id)).toBeGreaterThan(Number(rows[i - 1]!.id));
      }
    });
  }
  for (const serverId of byServer.keys()) expect(counters.has(serverId), `counter row for ${serverId}`).toBe(true);

  const streams = new Map<number, number[]>();
  const facetCounts = new Map<number, number>();
  for (const row of logs) {
    const expectTerm = (termId: number, kind: number, term: string, seq: number) => {
      const t = terms.get(termId);
      expect(t, `term ${termId}`).toBeDefined();
      expect([t!.server_id, t!.kind, t!.term, t!.folded]).toEqual([row.server_id, kind, term, term.toLowerCase()]);
      const list = streams.get(termId) ?? [];
      list.push(seq);
      streams.set(termId, list);
    };
    expectTerm(row.event_term, 1, row.event, Number(row.event_seq));
    expectTerm(row.ip_term, 2, row.ip ?? '', Number(row.ip_seq));
    expectTerm(row.actor_term, 3, row.actor_id === null ? '' : String(row.actor_id), Number(row.actor_seq));
    const f = facets.get(row.facet_id);
    expect(f, `facet ${row.facet_id}`).toBeDefined();
    expect([f!.server_id, f!.event_term, f!.ip_term, f!.actor_term]).toEqual([
      row.server_id,
      row.event_term,
      row.ip_term,
      row.actor_term,
    ]);
    facetCounts.set(row.facet_id, (facetCounts.get(row.facet_id) ?? 0) + 1);
  }
  for (const [id, t] of terms) {
    const seqs = streams.get(id) ?? [];
    expect(Number(t.total), `term ${t.term} total`).toBe(seqs.length);
    expect(seqs.length, `term ${t.term} is live`).toBeGreaterThan(0);
    // In seq order the term's own numbers run last-total+1 .. last without gaps.
    seqs.forEach((s, i) => expect(s, `term ${t.term} stream`).toBe(Number(t.last_seq) - seqs.length + 1 + i));
  }
  for (const [id, f] of facets) expect(Number(f.total), `facet ${id}`).toBe(facetCounts.get(id) ?? 0);
  for (const f of facets.values()) expect(Number(f.total)).toBeGreaterThan(0);
}

/** A small deterministic random source, so a failure can be replayed from its seed (shared with the benchmark). */
export const randomSource = seeded;

export const EVENT_NAMES = [
  'server:schedule.create',
  'server:schedule.update',
  'server:schedule.run',
  'server:task.create',
  'server:backup.start',
  'server:backup.complete',
  'server:backup.restore-failed',
  'server:power.start',
  'server:console.command',
  'server:test.a_b',
  'server:test.aXb',
  'server:test.100%',
  'server:test.back\\slash',
  'server:Test.UPPER',
];

export const IPS = [
  '10.0.0.1',
  '10.0.0.12',
  '192.168.1.5',
  '192.168.10.50',
  '2001:DB8::1',
  '2001:db8::ff',
  'fe80::1%eth0',
  '172.16.0.9',
  '::1',
  '10_0.0.1',
];

/** Random entries for the given servers and actors, timestamps mostly rising with ties and the odd step back. */
export function randomEntries(
  rand: ReturnType<typeof randomSource>,
  count: number,
  serverIds: number[],
  actors: Actor[],
  start: number,
): ActivityEntry[] {
  const clock = new Map(serverIds.map((id) => [id, start]));
  const out: ActivityEntry[] = [];
  for (let i = 0; i < count; i++) {
    const serverId = serverIds[Math.min(serverIds.length - 1, Math.floor(rand.next() ** 2 * serverIds.length))]!;
    const step = rand.chance(0.3) ? 0 : rand.chance(0.05) ? -rand.int(1, 5000) : rand.int(1, 60_000);
    const at = clock.get(serverId)! + step;
    clock.set(serverId, Math.max(at, clock.get(serverId)!));
    const actor = rand.pick(actors);
    out.push({
      serverId,
      event: rand.pick(EVENT_NAMES),
      actor: actor.userId === null ? actor : { ...actor, ip: rand.pick(IPS) },
      properties: rand.chance(0.5) ? { name: `n${i}` } : {},
      timestamp: at,
    });
  }
  return out;
}

/** A random needle: a piece of a known value, a wildcard character, or something absent. */
export function randomNeedle(rand: ReturnType<typeof randomSource>, values: readonly string[]): string {
  const roll = rand.next();
  if (roll < 0.15) return rand.pick(['%', '_', '\\', '.', ':', 'zz']);
  const value = rand.pick(values);
  const from = rand.int(0, value.length - 1);
  const piece = value.slice(from, from + rand.int(1, Math.max(1, value.length - from)));
  return rand.chance(0.3) ? piece.toUpperCase() : piece;
}
