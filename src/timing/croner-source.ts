import { Cron } from 'croner';
import type { CronCheck, CronFields, CronSource } from './cron-fields.js';
import { parseCronCached, type CronSets } from './cron-syntax.js';

/**
 * The cron source Quetzal runs on: SPEC's syntax parsed by cron-syntax.ts,
 * the calendar and time-zone search done by croner (a maintained library
 * that follows Vixie cron across DST changes, as docs/DECISIONS.md "Cron"
 * decides).
 *
 * The thin correction on top of croner is the pattern it is given: never the
 * user's text but the parsed sets written out as plain lists, which makes
 * croner's reading agree with Quetzal's (`a/n`, steps up to the field's
 * width, 7 as Sunday, repeated list items), plus a seconds field that carries
 * Vixie's classification of the job. Vixie calls a job fixed-time when its
 * minute and hour fields do not start with `*`; croner (with
 * `fixedTimeRule: 'no-wildcard'`) when its seconds, minute and hour fields
 * contain no `*` and no `/`. Plain lists contain neither, so the seconds
 * field decides: `0` for a fixed-time job, `0-0/1` (the same single second,
 * written as a step) for a wildcard job. The differential test
 * (test/timing/cron-differential.test.ts) holds the result to a brute-force
 * reading of DECISIONS.
 */

const FIXED_TIME_SECONDS = '0';
const WILDCARD_SECONDS = '0-0/1';

/** The croner pattern (six fields, seconds first) that means what `sets` means. */
function cronerPattern(sets: CronSets): string {
  const list = (values: readonly number[]) => values.join(',');
  return [
    sets.fixedTime ? FIXED_TIME_SECONDS : WILDCARD_SECONDS,
    list(sets.minutes),
    list(sets.hours),
    // Exactly `*` keeps croner out of the day-of-month/day-of-week OR rule, as SPEC wants.
    sets.dayOfMonthIsStar ? '*' : list(sets.daysOfMonth),
    list(sets.months),
    sets.dayOfWeekIsStar ? '*' : list(sets.daysOfWeek),
  ].join(' ');
}

/** One croner job per pattern and zone: building one parses the pattern, evaluating it does not. */
const jobs = new Map<string, Cron>();
const JOB_CACHE_LIMIT = 10_000;

function jobFor(sets: CronSets, timezone: string): Cron {
  const pattern = cronerPattern(sets);
  const key = `${timezone} ${pattern}`;
  let job = jobs.get(key);
  if (!job) {
    // No callback: croner schedules nothing, it only evaluates.
    job = new Cron(pattern, { timezone, mode: '6-part', fixedTimeRule: 'no-wildcard', domAndDow: false });
    if (jobs.size >= JOB_CACHE_LIMIT) jobs.clear();
    jobs.set(key, job);
  }
  return job;
}

const MINUTE_MS = 60_000;

function toEpochMs(time: Date | number): number {
  const ms = typeof time === 'number' ? time : time.getTime();
  if (!Number.isFinite(ms)) throw new RangeError('cron: the reference time is not a valid date');
  return ms;
}

export const cronerSource: CronSource = {
  validate(fields: CronFields): CronCheck {
    const parsed = parseCronCached(fields);
    return parsed.ok ? { ok: true } : parsed.failure;
  },

  nextRunAfter(fields: CronFields, after: Date | number, timezone: string): Date | null {
    const parsed = parseCronCached(fields);
    if (!parsed.ok) throw new Error(parsed.failure.message);
    if (!parsed.sets.canMatch) return null;
    // From the last millisecond of `after`'s minute: croner answers strictly after its argument,
    // and a run is a whole minute, so a time inside a matching minute gives the next match.
    const from = Math.floor(toEpochMs(after) / MINUTE_MS) * MINUTE_MS + MINUTE_MS - 1;
    return jobFor(parsed.sets, timezone).nextRun(new Date(from));
  },
};
