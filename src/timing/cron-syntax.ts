import type { CronCheck, CronField, CronFields } from './cron-fields.js';

/**
 * docs/reference/schedules.md#schedules's cron syntax, parsed into the set of values each field allows.
 *
 * Quetzal's own rather than a library's: the libraries accept far more than
 * SPEC does (`L`, `#`, `W`, `?`, `H`, seconds, `@daily`) and some reject what
 * docs/DECISIONS.md allows (`*\/60`, overlapping list items), and SPEC wants
 * the offending field named in every error. The evaluator behind it is handed
 * the parsed sets, never the user's text.
 *
 * Choices SPEC leaves open (docs/DECISIONS.md "Cron"): a day field counts as
 * restricted (for the OR rule) unless it is exactly `*`; `a/n` runs to the
 * field's end (day of week ends at 6, 7 being only an alias of Sunday); a
 * step may be at most the field's width; fields are trimmed, inner spaces are
 * rejected.
 */

/** A valid expression, as sets of allowed values in ascending order. */
export interface CronSets {
  minutes: readonly number[];
  hours: readonly number[];
  daysOfMonth: readonly number[];
  months: readonly number[];
  /** Sunday 0; 7 already folded into 0. */
  daysOfWeek: readonly number[];
  /** The day-of-month field is exactly `*` (else it takes part in the OR rule). */
  dayOfMonthIsStar: boolean;
  dayOfWeekIsStar: boolean;
  /**
   * Neither minute nor hour starts with `*`: a fixed-time job in Vixie cron's
   * sense, which decides what happens across DST changes (DECISIONS "Cron").
   */
  fixedTime: boolean;
  /** False when no calendar date can ever match (30 February). */
  canMatch: boolean;
}

type ParsedCron = { ok: true; sets: CronSets } | { ok: false; failure: CronCheck & { ok: false } };

interface FieldSpec {
  field: CronField;
  label: string;
  min: number;
  /** Largest value a user may write (7 for day of week, an alias of Sunday). */
  max: number;
  /** Where `*` and an open `a/n` stop: day of week ends at 6 so Sunday is not counted twice. */
  openMax: number;
  names?: readonly string[];
  /** Value of names[0]. */
  namesStart?: number;
}

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] as const;
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

/** In the order SPEC lists them, which is also the order errors are reported in. */
const FIELD_SPECS: readonly FieldSpec[] = [
  { field: 'minute', label: 'minute', min: 0, max: 59, openMax: 59 },
  { field: 'hour', label: 'hour', min: 0, max: 23, openMax: 23 },
  { field: 'day_of_month', label: 'day of month', min: 1, max: 31, openMax: 31 },
  { field: 'month', label: 'month', min: 1, max: 12, openMax: 12, names: MONTH_NAMES, namesStart: 1 },
  { field: 'day_of_week', label: 'day of week', min: 0, max: 7, openMax: 6, names: DAY_NAMES, namesStart: 0 },
];

class FieldError extends Error {}

/** Turns one field into the set of values it allows, or throws FieldError with the reason. */
function parseFieldValues(text: string, spec: FieldSpec): boolean[] {
  const trimmed = text.trim();
  if (trimmed === '') throw new FieldError('it is empty');
  if (/\s/.test(trimmed)) throw new FieldError('it must be a single value without spaces');
  const allowed = new Array<boolean>(spec.max + 1).fill(false);
  for (const item of trimmed.split(',')) {
    if (item === '') throw new FieldError('a list has an empty item');
    for (const value of parseListItem(item, spec)) allowed[value] = true;
  }
  return allowed;
}

/** One list item: `*`, `a`, `a-b`, each optionally followed by `/n` (`a/n` means from a to the end). */
function parseListItem(item: string, spec: FieldSpec): number[] {
  const slash = item.indexOf('/');
  const base = slash < 0 ? item : item.slice(0, slash);
  const step = slash < 0 ? 1 : parseStep(item.slice(slash + 1), spec);
  let from: number;
  let to: number;
  if (base === '*') {
    [from, to] = [spec.min, spec.openMax];
  } else if (base.includes('-')) {
    const parts = base.split('-');
    if (parts.length !== 2) throw new FieldError(`"${item}" is not a valid range`);
    [from, to] = [parseValue(parts[0] ?? '', spec), parseValue(parts[1] ?? '', spec)];
    if (from > to) throw new FieldError(`the range ${base} runs backwards`);
  } else {
    from = parseValue(base, spec);
    to = slash < 0 ? from : Math.max(from, spec.openMax);
  }
  const values: number[] = [];
  for (let value = from; value <= to; value += step) values.push(value);
  return values;
}

function parseStep(text: string, spec: FieldSpec): number {
  if (text === '') throw new FieldError('a step needs a number after "/"');
  if (!/^\d+$/.test(text)) throw new FieldError(`"${text}" is not a valid step`);
  const step = Number(text);
  const widest = spec.max - spec.min + 1;
  if (step < 1 || step > widest) throw new FieldError(`the step must be between 1 and ${widest}`);
  return step;
}

/** A number in the field's range, or (month, day of week) a three-letter English name in any case. */
function parseValue(text: string, spec: FieldSpec): number {
  if (text === '') throw new FieldError('a value is missing');
  if (/^\d+$/.test(text)) {
    const value = Number(text);
    if (value < spec.min || value > spec.max) throw new FieldError(`${text} is outside ${spec.min}-${spec.max}`);
    return value;
  }
  const index = spec.names?.indexOf(text.toUpperCase()) ?? -1;
  if (index < 0 || spec.namesStart === undefined) throw new FieldError(`"${text}" is not a valid value`);
  return spec.namesStart + index;
}

/** Longest month length, 29 for February because leap years have it. */
const LONGEST_MONTH = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Whether some (month, day) pair exists; only a day of month with `*` day of week can rule every date out. */
function canEverMatch(days: readonly number[], months: readonly number[], dayOfWeekIsStar: boolean): boolean {
  if (!dayOfWeekIsStar) return true;
  return months.some((month) => days.some((day) => day <= (LONGEST_MONTH[month] ?? 0)));
}

const valuesOf = (allowed: readonly boolean[]) => allowed.flatMap((on, value) => (on ? [value] : []));

function parseCron(fields: CronFields): ParsedCron {
  const values = new Map<CronField, boolean[]>();
  for (const spec of FIELD_SPECS) {
    const text: unknown = fields[spec.field];
    try {
      if (typeof text !== 'string') throw new FieldError('it must be a string');
      values.set(spec.field, parseFieldValues(text, spec));
    } catch (err) {
      if (!(err instanceof FieldError)) throw err;
      const message = `The ${spec.label} field is not a valid cron expression: ${err.message}.`;
      return { ok: false, failure: { ok: false, field: spec.field, message } };
    }
  }
  const get = (field: CronField): boolean[] => values.get(field) ?? [];
  const weekdays = get('day_of_week').slice(0, 7);
  if (get('day_of_week')[7]) weekdays[0] = true;
  const dayOfMonthIsStar = fields.day_of_month.trim() === '*';
  const dayOfWeekIsStar = fields.day_of_week.trim() === '*';
  const daysOfMonth = valuesOf(get('day_of_month'));
  const months = valuesOf(get('month'));
  return {
    ok: true,
    sets: {
      minutes: valuesOf(get('minute')),
      hours: valuesOf(get('hour')),
      daysOfMonth,
      months,
      daysOfWeek: valuesOf(weekdays),
      dayOfMonthIsStar,
      dayOfWeekIsStar,
      fixedTime: !fields.minute.trim().startsWith('*') && !fields.hour.trim().startsWith('*'),
      canMatch: canEverMatch(daysOfMonth, months, dayOfWeekIsStar),
    },
  };
}

/** Schedules share a handful of expressions, and the scheduler evaluates thousands at once: parse each once. */
const parsedCache = new Map<string, ParsedCron>();
const PARSED_CACHE_LIMIT = 10_000;

export function parseCronCached(fields: CronFields): ParsedCron {
  // Length prefixes keep the key unambiguous whatever the fields contain.
  const texts = [fields.minute, fields.hour, fields.day_of_month, fields.month, fields.day_of_week];
  const key = texts.map((text) => (typeof text === 'string' ? `${text.length}:${text}` : '?')).join('');
  const known = parsedCache.get(key);
  if (known) return known;
  const parsed = parseCron(fields);
  if (parsedCache.size >= PARSED_CACHE_LIMIT) parsedCache.clear();
  parsedCache.set(key, parsed);
  return parsed;
}
