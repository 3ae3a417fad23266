import type { ScheduleRow } from '../db/schema.js';

/** The five fields of a schedule's cron expression, as the API carries them (docs/reference/schedules.md#schedules). */
export interface CronFields {
  minute: string;
  hour: string;
  day_of_month: string;
  month: string;
  day_of_week: string;
}

export type CronField = keyof CronFields;

export type CronCheck = { ok: true } | { ok: false; field: CronField | 'cron'; message: string };

/**
 * Where next run times come from. Injected beside the clock (STYLE: "the
 * clock, the daemon and the cron source are injected"), so that a test can
 * swap the evaluator, and so that the library behind it is one file.
 */
export interface CronSource {
  /** The five fields against docs/reference/schedules.md#schedules's syntax; a failure names the offending field (or 'cron'). */
  validate(fields: CronFields): CronCheck;
  /**
   * The first firing minute strictly after `after`, on the wall clock of the
   * IANA `timezone` (DST as docs/DECISIONS.md "Cron" says); null when the
   * expression can never match. Throws for an invalid expression.
   */
  nextRunAfter(fields: CronFields, after: Date | number, timezone: string): Date | null;
}

/** The five cron fields of a schedule row. */
export function cronFieldsOf(
  schedule: Pick<ScheduleRow, 'cron_minute' | 'cron_hour' | 'cron_day_of_month' | 'cron_month' | 'cron_day_of_week'>,
): CronFields {
  return {
    minute: schedule.cron_minute,
    hour: schedule.cron_hour,
    day_of_month: schedule.cron_day_of_month,
    month: schedule.cron_month,
    day_of_week: schedule.cron_day_of_week,
  };
}
