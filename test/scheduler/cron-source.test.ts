import { expect, it } from 'vitest';
import type { CronFields, CronSource } from '../../src/timing/cron.js';
import { describeEachDatabase } from '../helpers/databases.js';
import { makeSchedule, useSchedulerHarness, waitForRunEnd } from './helpers.js';

/** The cron source is injected like the clock: a scheduler asks the one it was given for next_run_at. */
describeEachDatabase('scheduler cron source', (database) => {
  const h = useSchedulerHarness(database, { APP_TIMEZONE: 'Asia/Kolkata' });

  it('takes next_run_at from the injected source, in the panel time zone', async () => {
    const { server } = await h.make.ownedServer();
    const questions: { fields: CronFields; after: number; timezone: string }[] = [];
    // An answer no real evaluator of `5 4 * * *` would give: a whole minute 123 days on.
    const answer = (after: number) => Math.floor(after / 60_000) * 60_000 + 123 * 86_400_000;
    const source: CronSource = {
      validate: () => ({ ok: true }),
      nextRunAfter: (fields, after, timezone) => {
        const ms = typeof after === 'number' ? after : after.getTime();
        questions.push({ fields, after: ms, timezone });
        return new Date(answer(ms));
      },
    };
    const before = Date.now();
    const schedule = await makeSchedule(h.db.db, server, {
      cron: '5 4 * * *',
      nextRunAt: before - 1_000,
      tasks: [{ action: 'command', payload: 'hello' }],
    });

    await h.scheduler({ cron: source }).tick();
    const row = await waitForRunEnd(h.db.db, schedule.id);

    expect(questions).toHaveLength(1);
    expect(questions[0]).toMatchObject({
      fields: { minute: '5', hour: '4', day_of_month: '*', month: '*', day_of_week: '*' },
      timezone: 'Asia/Kolkata',
    });
    expect(questions[0]!.after).toBeGreaterThanOrEqual(before);
    expect(row.next_run_at).toBe(answer(questions[0]!.after));
  });
});
