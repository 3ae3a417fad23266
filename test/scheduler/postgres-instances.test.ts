import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { testDatabases, type TestDatabase } from '../helpers/databases.js';
import { spawnWorker, stopWorker, useSchedulerHarness, waitFor, workerCommand, type WorkerProcess } from './helpers.js';

/**
 * Several instances on one PostgreSQL (docs/reference/schedules.md#running-schedules): two worker processes, 200
 * schedules due at the same second, every run exactly once.
 */
const postgres: TestDatabase | undefined = testDatabases.find((d) => d.name === 'postgres');
if (!postgres) console.warn('scheduler multi-instance test skipped: it needs PostgreSQL; set TEST_DATABASE_URL to run it.');

describe.skipIf(!postgres)('two scheduler instances on one PostgreSQL', () => {
  const h = useSchedulerHarness(postgres!);

  it(`runs each of 200 schedules due at the same second exactly once (${workerCommand().kind} workers)`, async () => {
    const { server } = await h.make.ownedServer();
    const now = Date.now();
    // Far enough ahead for both workers to be up and asleep when it comes.
    const dueAt = Math.ceil((now + 4_000) / 1000) * 1000;
    const schedules = await h.db.db
      .insertInto('schedules')
      .values(
        Array.from({ length: 200 }, (_, i) => ({
          server_id: server.id,
          name: `burst ${i}`,
          cron_minute: '0',
          cron_hour: '0',
          cron_day_of_month: '1',
          cron_month: '1',
          cron_day_of_week: '*',
          is_active: 1,
          is_processing: 0,
          only_when_online: 0,
          last_run_at: null,
          next_run_at: dueAt,
          created_at: now,
          updated_at: now,
        })),
      )
      .returning('id')
      .execute();
    const ids = schedules.map((s) => s.id);
    await h.db.db
      .insertInto('tasks')
      .values(
        ids.map((id) => ({
          schedule_id: id,
          sequence_id: 1,
          action: 'delete_files',
          payload: `gone-${id}.txt`,
          time_offset: 0,
          is_queued: 0,
          continue_on_failure: 0,
          created_at: now,
          updated_at: now,
        })),
      )
      .execute();

    const workers: WorkerProcess[] = [0, 1].map(() => spawnWorker({ DATABASE_URL: h.db.url, DATA_DIR: h.dataDir, ...h.db.env }));
    try {
      await waitFor(
        async () => {
          const { rows } = await sql<{
            n: number;
          }>`select count(*)::int as n from schedules where id in (${sql.join(ids)}) and (last_run_at is null or is_processing = 1)`.execute(
            h.db.db,
          );
          return rows[0]!.n === 0;
        },
        20_000,
        `every run (worker output: ${workers.map((w) => w.output()).join('\n---\n')})`,
      );
    } finally {
      await Promise.all(workers.map((w) => stopWorker(w)));
    }

    const { rows } = await sql<{ event: string; properties: string; n: number; first: number }>`
      select event, properties, count(*)::int as n, min(timestamp) as first from activity_logs
      where server_id = ${server.id} group by event, properties
    `.execute(h.db.db);
    const runs = rows.filter((r) => r.event === 'server:schedule.run');
    // One entry per schedule name, each written once.
    expect(runs).toHaveLength(200);
    expect(runs.every((r) => r.n === 1)).toBe(true);
    expect(rows.filter((r) => r.event === 'server:file.delete').reduce((sum, r) => sum + r.n, 0)).toBe(200);
    // Nobody started early.
    expect(Math.min(...runs.map((r) => Number(r.first)))).toBeGreaterThanOrEqual(dueAt);
  });
});
