import type { ScheduleRow } from '../db/schema.js';
/**
 * The cron evaluator behind schedule validation (SPEC 2.1) and the scheduler's
 * `next_run_at` (SPEC 7).
 *
 * Self-written rather than wrapping `cron-parser`: SPEC's syntax is small, and
 * owning the evaluator makes the three subtle parts explicit and testable —
 * the day-of-month/day-of-week OR rule, 7 as Sunday, and time-zone transitions.
 *
 * Time zones. Matching happens on the wall clock of the IANA zone; the zone's
 * offset transitions are found once per zone and UTC year (a daily offset
 * sample, then a binary search to the minute) and cached, so evaluating a
 * schedule costs a few Date operations and no Intl call. Across a transition
 * we follow classic (Vixie) cron, which splits jobs in two kinds:
 *
 * - a *wildcard* job has a minute or hour field starting with `*` (`*`, or a
 *   step over `*`); it keeps running by real time: it fires in both passes of
 *   a repeated hour and simply has no runs at wall times that do not exist;
 * - a *fixed-time* job (`30 2 * * *`) runs once per matching wall time: in a
 *   repeated hour (fall back) only at the first pass, and when its wall time
 *   is skipped (spring forward) once, at the instant the clock jumps (03:00
 *   for Europe/Berlin), however many of its times fell into the gap.
 *
 * Syntax choices SPEC leaves open: a day field counts as restricted (for the
 * OR rule) unless it is exactly `*`, so a step over `*` (every 2nd day)
 * restricts, as in cron-parser; `a/n` runs to the field's end (day of week
 * ends at 6, 7 being only an alias of Sunday); a step may be at most the
 * field's width; fields are trimmed, but inner spaces are rejected.
 *
 * In every zone each result is a real instant, strictly after the given one,
 * at second 0 and millisecond 0, and the search is bounded.
 */

export interface CronFields {
  minute: string;
  hour: string;
  day_of_month: string;
  month: string;
  day_of_week: string;
}

export type CronField = keyof CronFields;

export type CronCheck = { ok: true } | { ok: false; field: CronField | 'cron'; message: string };

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
/**
 * How far nextRunAfter looks. A valid expression always matches within eight
 * years (29 February skips 2100), so finding nothing by then means never.
 */
const HORIZON_MS = 9 * 366 * DAY_MS;
/** Enough for any real sequence of offset transitions inside the horizon; only a guard against looping. */
const MAX_SEGMENTS = 1_000;

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

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

/** A parsed expression in the shape the minute search wants. */
interface CronExpression {
  /** For each minute 0-59, the smallest allowed minute >= it, or -1. */
  nextMinute: Int8Array;
  /** For each hour 0-23, the smallest allowed hour >= it, or -1. */
  nextHour: Int8Array;
  /** Indexed by day of month 1-31. */
  days: boolean[];
  /** Indexed by month 1-12. */
  months: boolean[];
  /** Indexed by day of week 0-6, Sunday 0 (7 already folded into 0). */
  weekdays: boolean[];
  /** Both day fields are something other than `*`: a day matches if either does (classic cron). */
  daysEitherOr: boolean;
  /** Neither minute nor hour starts with `*`; decides how transitions are treated (see the file comment). */
  fixedTime: boolean;
  /** False when no calendar date can ever match (30 February). */
  canMatch: boolean;
}

type Parsed = { ok: true; expression: CronExpression } | { ok: false; failure: CronCheck & { ok: false } };

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

/** For every position, the smallest allowed value at or after it (-1 if none): the search jumps instead of stepping. */
function nextAllowedTable(allowed: readonly boolean[]): Int8Array {
  const table = new Int8Array(allowed.length);
  let next = -1;
  for (let value = allowed.length - 1; value >= 0; value--) {
    if (allowed[value]) next = value;
    table[value] = next;
  }
  return table;
}

/** Longest month length, 29 for February because leap years have it. */
const LONGEST_MONTH = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Whether some (month, day) pair exists; only day of month with `*` day of week can rule every date out. */
function canEverMatch(days: readonly boolean[], months: readonly boolean[], daysEitherOr: boolean, domIsStar: boolean): boolean {
  if (daysEitherOr || domIsStar) return true;
  for (let month = 1; month <= 12; month++) {
    if (!months[month]) continue;
    for (let day = 1; day <= (LONGEST_MONTH[month] ?? 0); day++) if (days[day]) return true;
  }
  return false;
}

function isStar(text: string): boolean {
  return text.trim() === '*';
}

function startsWithStar(text: string): boolean {
  return text.trim().startsWith('*');
}

function parseExpression(fields: CronFields): Parsed {
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
  const daysEitherOr = !isStar(fields.day_of_month) && !isStar(fields.day_of_week);
  return {
    ok: true,
    expression: {
      nextMinute: nextAllowedTable(get('minute')),
      nextHour: nextAllowedTable(get('hour')),
      days: get('day_of_month'),
      months: get('month'),
      weekdays,
      daysEitherOr,
      fixedTime: !startsWithStar(fields.minute) && !startsWithStar(fields.hour),
      canMatch: canEverMatch(get('day_of_month'), get('month'), daysEitherOr, isStar(fields.day_of_month)),
    },
  };
}

/** Schedules share a handful of expressions, and the scheduler evaluates thousands at once: parse each once. */
const parsedCache = new Map<string, Parsed>();
const PARSED_CACHE_LIMIT = 10_000;

function parseCached(fields: CronFields): Parsed {
  // Length prefixes keep the key unambiguous whatever the fields contain.
  const texts = [fields.minute, fields.hour, fields.day_of_month, fields.month, fields.day_of_week];
  const key = texts.map((text) => (typeof text === 'string' ? `${text.length}:${text}` : '?')).join('');
  const known = parsedCache.get(key);
  if (known) return known;
  const parsed = parseExpression(fields);
  if (parsedCache.size >= PARSED_CACHE_LIMIT) parsedCache.clear();
  parsedCache.set(key, parsed);
  return parsed;
}

// ---------------------------------------------------------------------------
// Wall-clock search. "Wall" times are the zone's local date-time encoded as if
// it were UTC, so plain Date.UTC arithmetic walks the calendar.
// ---------------------------------------------------------------------------

function dayMatches(expression: CronExpression, dayOfMonth: number, dayOfWeek: number): boolean {
  const byDate = expression.days[dayOfMonth] === true;
  const byWeekday = expression.weekdays[dayOfWeek] === true;
  // With one of them `*` its set is full, so AND leaves only the other as the restriction.
  return expression.daysEitherOr ? byDate || byWeekday : byDate && byWeekday;
}

function ceilToMinute(ms: number): number {
  return Math.ceil(ms / MINUTE_MS) * MINUTE_MS;
}

/** The first wall time in [from, limit) the expression matches, jumping over whole months, days and hours that cannot. */
function firstMatchingWall(expression: CronExpression, from: number, limit: number): number | null {
  let wall = ceilToMinute(from);
  while (wall < limit) {
    const date = new Date(wall);
    const year = date.getUTCFullYear();
    const month = date.getUTCMonth();
    const day = date.getUTCDate();
    if (!expression.months[month + 1]) {
      wall = Date.UTC(year, month + 1, 1);
      continue;
    }
    if (!dayMatches(expression, day, date.getUTCDay())) {
      wall = Date.UTC(year, month, day + 1);
      continue;
    }
    const hour = date.getUTCHours();
    const nextHour = expression.nextHour[hour] ?? -1;
    if (nextHour !== hour) {
      wall = nextHour < 0 ? Date.UTC(year, month, day + 1) : Date.UTC(year, month, day, nextHour);
      continue;
    }
    const minute = date.getUTCMinutes();
    const nextMinute = expression.nextMinute[minute] ?? -1;
    if (nextMinute === minute) return wall;
    wall = nextMinute < 0 ? Date.UTC(year, month, day, hour + 1) : Date.UTC(year, month, day, hour, nextMinute);
  }
  return null;
}

// ---------------------------------------------------------------------------
// Time-zone offsets
// ---------------------------------------------------------------------------

/** A change of the zone's UTC offset: from minute `at` on, wall = instant + `after` (it was + `before`). */
interface Transition {
  at: number;
  before: number;
  after: number;
}

interface ZoneYear {
  /** Offset before the year's first transition (at the start of the UTC year unless one falls exactly there). */
  initialOffset: number;
  /** Transitions with `at` inside the UTC year, in order. */
  transitions: Transition[];
}

/** The last of `transitions` (in order) at or before `at`. */
function lastAtOrBefore(transitions: readonly Transition[], at: number): Transition | undefined {
  let found: Transition | undefined;
  for (const transition of transitions) {
    if (transition.at > at) break;
    found = transition;
  }
  return found;
}

/** The offsets of one IANA zone, learnt from Intl one UTC year at a time and kept. */
class ZoneOffsets {
  private readonly format: Intl.DateTimeFormat;
  private readonly years = new Map<number, ZoneYear>();

  constructor(timezone: string) {
    // Throws RangeError for an unknown zone; config validates APP_TIMEZONE at start.
    this.format = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  }

  /** Wall time minus instant at `at`, straight from Intl; only used while building a year. */
  private measure(at: number): number {
    const parts: Partial<Record<Intl.DateTimeFormatPartTypes, number>> = {};
    for (const part of this.format.formatToParts(at)) if (part.type !== 'literal') parts[part.type] = Number(part.value);
    const wall = Date.UTC(
      parts.year ?? 0,
      (parts.month ?? 1) - 1,
      parts.day ?? 1,
      parts.hour ?? 0,
      parts.minute ?? 0,
      parts.second ?? 0,
    );
    return wall - Math.floor(at / 1000) * 1000;
  }

  /** The first minute in (low, high] whose offset differs from low's, knowing high's does. */
  private findChange(low: number, high: number, lowOffset: number): number {
    while (high - low > MINUTE_MS) {
      const middle = low + Math.floor((high - low) / MINUTE_MS / 2) * MINUTE_MS;
      if (this.measure(middle) === lowOffset) low = middle;
      else high = middle;
    }
    return high;
  }

  /**
   * Samples the offset at every UTC midnight of the year (and its last
   * minute), then pins each change to the minute. A zone that changed and
   * changed back between two samples would be missed; no real zone does.
   */
  private buildYear(year: number): ZoneYear {
    const start = Date.UTC(year, 0, 1);
    const lastMinute = Date.UTC(year + 1, 0, 1) - MINUTE_MS;
    const initialOffset = this.measure(start - MINUTE_MS);
    const transitions: Transition[] = [];
    let previous = start - MINUTE_MS;
    let previousOffset = initialOffset;
    for (let sample = start; previous < lastMinute; sample = Math.min(sample + DAY_MS, lastMinute)) {
      const sampleOffset = this.measure(sample);
      while (sampleOffset !== previousOffset) {
        const at = this.findChange(previous, sample, previousOffset);
        const after = this.measure(at);
        transitions.push({ at, before: previousOffset, after });
        [previous, previousOffset] = [at, after];
      }
      previous = sample;
    }
    return { initialOffset, transitions };
  }

  private year(year: number): ZoneYear {
    let known = this.years.get(year);
    if (!known) {
      known = this.buildYear(year);
      this.years.set(year, known);
    }
    return known;
  }

  /** The latest transition at or before `at` (looking into the previous year too), if any. */
  transitionAtOrBefore(at: number): Transition | null {
    const year = new Date(at).getUTCFullYear();
    return lastAtOrBefore(this.year(year).transitions, at) ?? this.year(year - 1).transitions.at(-1) ?? null;
  }

  offsetAt(at: number): number {
    const zoneYear = this.year(new Date(at).getUTCFullYear());
    return lastAtOrBefore(zoneYear.transitions, at)?.after ?? zoneYear.initialOffset;
  }

  /** The first transition in (from, to], if any. */
  transitionWithin(from: number, to: number): Transition | null {
    const lastYear = new Date(to).getUTCFullYear();
    for (let year = new Date(from).getUTCFullYear(); year <= lastYear; year++) {
      for (const transition of this.year(year).transitions) {
        if (transition.at > to) return null;
        if (transition.at > from) return transition;
      }
    }
    return null;
  }
}

const zones = new Map<string, ZoneOffsets>();

function zoneOffsets(timezone: string): ZoneOffsets {
  let zone = zones.get(timezone);
  if (!zone) {
    zone = new ZoneOffsets(timezone);
    zones.set(timezone, zone);
  }
  return zone;
}

// ---------------------------------------------------------------------------
// Instants
// ---------------------------------------------------------------------------

/**
 * The first firing instant at or after `from` while the offset stays what it
 * is at `from` (the caller checks for a transition before the result).
 */
function firstFiringFrom(expression: CronExpression, zone: ZoneOffsets, from: number, end: number): number | null {
  const offset = zone.offsetAt(from);
  const transition = zone.transitionAtOrBefore(from);
  let wallFrom = from + offset;
  if (transition && expression.fixedTime) {
    const springsForward = transition.after > transition.before;
    // Fixed-time jobs whose wall time the jump skipped run once, as the clock jumps.
    if (springsForward && transition.at === from) {
      const skipped = firstMatchingWall(expression, transition.at + transition.before, transition.at + transition.after);
      if (skipped !== null) return from;
    }
    // Fixed-time jobs already ran at the first pass of a repeated hour.
    if (!springsForward) wallFrom = Math.max(wallFrom, transition.at + transition.before);
  }
  const wall = firstMatchingWall(expression, wallFrom, end + offset);
  return wall === null ? null : wall - offset;
}

function toEpochMs(time: Date | number): number {
  const ms = typeof time === 'number' ? time : time.getTime();
  if (!Number.isFinite(ms)) throw new RangeError('cron: the reference time is not a valid date');
  return ms;
}

/**
 * First matching minute strictly after `after`, evaluated in the IANA
 * `timezone`; null if none within the horizon (the expression can never
 * match). Throws for an invalid expression, which checkCron rejects first.
 */
export function nextRunAfter(fields: CronFields, after: Date | number, timezone: string): Date | null {
  const parsed = parseCached(fields);
  if (!parsed.ok) throw new Error(parsed.failure.message);
  const expression = parsed.expression;
  if (!expression.canMatch) return null;
  const zone = zoneOffsets(timezone);
  let from = Math.floor(toEpochMs(after) / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  const end = from + HORIZON_MS;
  for (let segment = 0; segment < MAX_SEGMENTS && from < end; segment++) {
    const candidate = firstFiringFrom(expression, zone, from, end);
    if (candidate === null) return null;
    // A transition before the candidate means it was computed with the wrong offset: go on from the transition.
    const transition = zone.transitionWithin(from, candidate);
    if (!transition) return new Date(candidate);
    from = transition.at;
  }
  return null;
}

/**
 * Validates the five fields; on failure names the offending field (or 'cron'
 * when no single field is to blame, e.g. never matching like 30 February).
 */
export function checkCron(fields: CronFields, timezone: string, now: Date | number): CronCheck {
  const parsed = parseCached(fields);
  if (!parsed.ok) return parsed.failure;
  if (!parsed.expression.canMatch || nextRunAfter(fields, now, timezone) === null) {
    return { ok: false, field: 'cron', message: 'The cron expression never matches a future time (for example 30 February).' };
  }
  return { ok: true };
}

/** The five cron fields of a schedule row. */
export function cronFieldsOf(schedule: ScheduleRow): CronFields {
  return {
    minute: schedule.cron_minute,
    hour: schedule.cron_hour,
    day_of_month: schedule.cron_day_of_month,
    month: schedule.cron_month,
    day_of_week: schedule.cron_day_of_week,
  };
}
