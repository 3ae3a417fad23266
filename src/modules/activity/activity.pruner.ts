import type { Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { Database, Queryable } from '../../db/database.js';
import {
  deleteEntries,
  findOldestEntries,
  findServersWithEntriesBefore,
  lockServerCounter,
  subtractFromServerTotal,
  subtractTotals,
} from './activity.repository.js';

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
export async function pruneActivity(
  deps: Pick<PrunerDeps, 'db' | 'config'>,
  now: number,
  options: PruneOptions = {},
): Promise<number> {
  const cutoff = now - deps.config.activityPruneDays * DAY_MS;
  const batchSize = options.batchSize ?? DEFAULT_BATCH;
  const servers = await findServersWithEntriesBefore(deps.db, cutoff);
  let deleted = 0;
  for (const serverId of servers) {
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
  const counter = await lockServerCounter(db, serverId);
  if (!counter || Number(counter.total) === 0) return 0;
  const first = Number(counter.last_seq) - Number(counter.total) + 1;
  const rows = await findOldestEntries(db, serverId, first, batchSize, cutoff);
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

  await deleteEntries(db, serverId, first, first + n - 1);
  await subtractTotals(db, 'activity_terms', termCounts);
  await subtractTotals(db, 'activity_facets', facetCounts);
  await subtractFromServerTotal(db, serverId, n);
  return n;
}

export interface ActivityPruner {
  stop(): Promise<void>;
}

/**
 * Prunes in the background: soon after start, then every `intervalMs`. A pass
 * that fails is logged and retried at the next tick.
 */
export function startActivityPruner(
  deps: PrunerDeps,
  options: PruneOptions & { intervalMs?: number; firstRunMs?: number } = {},
): ActivityPruner {
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
