import { checkCron, nextRunAfter, type CronFields } from '../../../src/timing/cron';
import { parseCronCached, type CronSets } from '../../../src/timing/cron-syntax';
import { listing } from './format';

/**
 * A schedule's cron fields in words, and its next run times, computed in the
 * browser by the panel's own cron code (src/timing: the same syntax and the
 * same croner evaluation the scheduler uses), in the panel's time zone.
 */

export type CronPreview =
  { ok: true; description: string; next: Date[] } | { ok: false; field: keyof CronFields | 'cron'; message: string };

const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTH_NAMES = [
  '',
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

const two = (n: number) => String(n).padStart(2, '0');

/** Runs of consecutive values as "a to b" (three or more), singles as they are. */
function ranges(values: readonly number[], name: (value: number) => string): string {
  const parts: string[] = [];
  for (let i = 0; i < values.length;) {
    let j = i;
    while (j + 1 < values.length && values[j + 1] === values[j]! + 1) j++;
    const first = values[i]!;
    const last = values[j]!;
    if (j - i >= 2) parts.push(`${name(first)} to ${name(last)}`);
    else for (let k = i; k <= j; k++) parts.push(name(values[k]!));
    i = j + 1;
  }
  return listing(parts);
}

/** `*\/n` or `a-b/n` style steps: "every n". */
function stepOf(text: string): number | null {
  const match = /^\*\/(\d+)$/.exec(text.trim());
  return match ? Number(match[1]) : null;
}

function timeOfDay(fields: CronFields, sets: CronSets): string {
  const { minutes, hours } = sets;
  const everyHour = hours.length === 24;
  if (minutes.length === 60 && everyHour) return 'Every minute';
  if (everyHour) {
    const step = stepOf(fields.minute);
    if (step !== null && step > 1) return `Every ${step} minutes`;
    return minutes.length === 1
      ? `At minute ${minutes[0]} past every hour`
      : `At minutes ${ranges(minutes, String)} past every hour`;
  }
  const hourStep = stepOf(fields.hour);
  const whichHours = hourStep !== null ? `every ${hourStep} hours` : `hour${hours.length === 1 ? '' : 's'} ${ranges(hours, two)}`;
  if (minutes.length === 60) return `Every minute of ${whichHours}`;
  if (minutes.length * hours.length <= 6) {
    return `At ${listing(hours.flatMap((hour) => minutes.map((minute) => `${two(hour)}:${two(minute)}`)))}`;
  }
  return `At minute${minutes.length === 1 ? '' : 's'} ${ranges(minutes, String)} past ${whichHours}`;
}

function days(sets: CronSets): string {
  const weekdays = ranges(sets.daysOfWeek, (day) => DAY_NAMES[day] ?? String(day));
  const monthDays = `on day ${ranges(sets.daysOfMonth, String)} of the month`;
  let text: string;
  if (sets.dayOfMonthIsStar && sets.dayOfWeekIsStar) text = 'every day';
  else if (sets.dayOfWeekIsStar) text = monthDays;
  else if (sets.dayOfMonthIsStar) text = `on ${weekdays}`;
  else text = `${monthDays} or on ${weekdays}`;
  if (sets.months.length < 12) text += `, in ${ranges(sets.months, (month) => MONTH_NAMES[month] ?? String(month))}`;
  return text;
}

export function describeCron(fields: CronFields): string | null {
  const parsed = parseCronCached(fields);
  if (!parsed.ok) return null;
  return `${timeOfDay(fields, parsed.sets)}, ${days(parsed.sets)}.`;
}

export function previewCron(fields: CronFields, timezone: string, now: Date = new Date(), count = 5): CronPreview {
  const check = checkCron(fields, timezone, now);
  if (!check.ok) return check;
  const next: Date[] = [];
  let after: Date | null = now;
  while (next.length < count && after) {
    after = nextRunAfter(fields, after, timezone);
    if (after) next.push(after);
  }
  return { ok: true, description: describeCron(fields) ?? '', next };
}
