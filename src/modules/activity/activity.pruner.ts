import { sql } from 'kysely';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { Database, Queryable } from '../../db/database.js';

/**
 * Deletes activity entries older than ACTIVITY_PRUNE_DAYS, oldest first, in
 * small transactions that also move the server's counters, terms and facets
 * (migration 002). Timestamps never decrease along a server's `seq`, so the
 * entries to delete are always a prefix of its log, and every term's stream
 * loses a prefix too: the live entries stay numbered without gaps.
 */
export interface PrunerDeps {
  db: Database;
  clock: Clock;
  config: Pick<Config, 'activityPruneDays'>;
  logger?: { info(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

export interface PruneOptions {
  /** Entries deleted per transaction: small, so writers of the same server wait only briefly. */
  batchSize?: number;
  /** Checked between transactions: a pass stops early once this says so (shutdown). */
  shouldStop?: () => boolean;
}

const DAY_MS = 86_400_000;
const DEFAULT_BATCH = 500;
const DEFAULT_INTERVAL_MS = 10 * 60_000;

/** One pass: every server's entries older than the cutoff. Returns how many were deleted. */
export async function pruneActivity(deps: Pick<PrunerDeps, 'db' | 'config'>, now: number, options: PruneOptions = {}): Promise<number> {
  const cutoff = now - deps.config.activityPruneDays * DAY_MS;
  const batchSize = options.batchSize ?? DEFAULT_BATCH;
  // Servers whose oldest live entry is older than the cutoff: one index probe each.
  const servers = await sql<{ server_id: number }>`
    select s.server_id from activity_servers s
    join activity_logs l on l.server_id = s.server_id and l.seq = s.last_seq - s.total + 1
    where s.total > 0 and l.timestamp < ${cutoff}
    order by s.server_id
  `.execute(deps.db);
  let deleted = 0;
  for (const { server_id: serverId } of servers.rows) {
    for (;;) {
      if (options.shouldStop?.()) return deleted;
      const n = await deps.db.transaction().execute((trx) => pruneBatch(trx, serverId, cutoff, batchSize));
      deleted += n;
      if (n < batchSize) break;
    }
  }
  return deleted;
}

/** Deletes up to `batchSize` of one server's oldest entries stamped before `cutoff`. */
async function pruneBatch(db: Queryable, serverId: number, cutoff: number, batchSize: number): Promise<number> {
  // The counter row is every writer's lock for this server (see activity.recorder.ts); a no-op update takes it.
  const counter = await db
    .updateTable('activity_servers')
    .set((eb) => ({ last_seq: eb.ref('last_seq') }))
    .where('server_id', '=', serverId)
    .returning(['last_seq', 'total'])
    .executeTakeFirst();
  if (!counter || Number(counter.total) === 0) return 0;
  const first = Number(counter.last_seq) - Number(counter.total) + 1;
  const rows = await db
    .selectFrom('activity_logs')
    .select(['seq', 'event_term', 'ip_term', 'actor_term', 'facet_id'])
    .where('server_id', '=', serverId)
    .where('seq', '>=', first)
    .where('seq', '<', first + batchSize)
    .where('timestamp', '<', cutoff)
    .orderBy('seq')
    .execute();
  // Only the unbroken run from the oldest entry: the log must stay a gapless range.
  let n = 0;
  while (n < rows.length && Number(rows[n]!.seq) === first + n) n += 1;
  if (n === 0) return 0;
  const doomed = rows.slice(0, n);

  const termCounts = new Map<number, number>();
  const facetCounts = new Map<number, number>();
  for (const row of doomed) {
    for (const term of [row.event_term, row.ip_term, row.actor_term]) termCounts.set(term, (termCounts.get(term) ?? 0) + 1);
    facetCounts.set(row.facet_id, (facetCounts.get(row.facet_id) ?? 0) + 1);
  }

  await db
    .deleteFrom('activity_logs')
    .where('server_id', '=', serverId)
    .where('seq', '>=', first)
    .where('seq', '<=', first + n - 1)
    .execute();
  await subtractTotals(db, 'activity_terms', termCounts);
  await subtractTotals(db, 'activity_facets', facetCounts);
  await db
    .updateTable('activity_servers')
    .set((eb) => ({ total: eb('total', '-', n) }))
    .where('server_id', '=', serverId)
    .execute();
  return n;
}

/** `total -= count` per id; rows left at zero go, so the vocabulary holds only live terms. */
async function subtractTotals(db: Queryable, table: 'activity_terms' | 'activity_facets', counts: Map<number, number>) {
  const ids = [...counts.keys()];
  if (ids.length === 0) return;
  const byCount = sql.join(
    // Literals: the ids and counts are integers we computed, and PostgreSQL cannot type bare CASE parameters.
    [...counts].map(([id, count]) => sql`when ${sql.lit(id)} then ${sql.lit(count)}`),
    sql` `,
  );
  await sql`update ${sql.table(table)} set total = total - (case id ${byCount} end) where id in (${sql.join(ids)})`.execute(db);
  await sql`delete from ${sql.table(table)} where id in (${sql.join(ids)}) and total = 0`.execute(db);
}

export interface ActivityPruner {
  stop(): Promise<void>;
}

/**
 * Prunes in the background: soon after start, then every `intervalMs`. A pass
 * that fails is logged and retried at the next tick.
 */
export function startActivityPruner(deps: PrunerDeps, options: PruneOptions & { intervalMs?: number; firstRunMs?: number } = {}): ActivityPruner {
  const interval = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  let stopped = false;
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;

  const tick = () => {
    timer = undefined;
    if (stopped) return;
    running = pruneActivity(deps, deps.clock.now(), { ...options, shouldStop: () => stopped })
      .then((deleted) => {
        if (deleted > 0) deps.logger?.info({ deleted, days: deps.config.activityPruneDays }, 'old activity entries pruned');
      })
      .catch((err: unknown) => deps.logger?.error({ err }, 'activity pruning failed'))
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(tick, interval).unref();
      });
  };
  timer = setTimeout(tick, options.firstRunMs ?? 5_000).unref();

  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
