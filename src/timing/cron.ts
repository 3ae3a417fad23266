import type { CronCheck, CronFields, CronSource } from './cron-fields.js';
import { cronerSource } from './croner-source.js';

/**
 * Cron for schedule validation (docs/reference/schedules.md#schedules) and the scheduler's `next_run_at`
 * (docs/reference/schedules.md#running-schedules). The evaluation sits behind a CronSource (cron-fields.ts); the
 * default is croner with Quetzal's own syntax in front (croner-source.ts).
 * Why croner, and what the differential measured: docs/DECISIONS.md "Cron".
 */

export { cronFieldsOf, type CronCheck, type CronField, type CronFields, type CronSource } from './cron-fields.js';

export const defaultCronSource: CronSource = cronerSource;

/**
 * First matching minute strictly after `after`, evaluated in the IANA
 * `timezone`; null if the expression can never match. Throws for an invalid
 * expression, which checkCron rejects first.
 */
export function nextRunAfter(
  fields: CronFields,
  after: Date | number,
  timezone: string,
  source: CronSource = defaultCronSource,
): Date | null {
  return source.nextRunAfter(fields, after, timezone);
}

/**
 * Validates the five fields; on failure names the offending field (or 'cron'
 * when no single field is to blame, e.g. never matching like 30 February).
 */
export function checkCron(
  fields: CronFields,
  timezone: string,
  now: Date | number,
  source: CronSource = defaultCronSource,
): CronCheck {
  const check = source.validate(fields);
  if (!check.ok) return check;
  if (source.nextRunAfter(fields, now, timezone) === null) {
    return { ok: false, field: 'cron', message: 'The cron expression never matches a future time (for example 30 February).' };
  }
  return { ok: true };
}
