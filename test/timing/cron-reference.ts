import type { CronFields } from '../../src/timing/cron.js';

/**
 * A brute-force cron evaluator, the yardstick of the differential test:
 * written to be obviously right rather than fast. It reads docs/DECISIONS.md
 * "Cron" literally, minute by real minute, asking Intl for the zone's offset,
 * and shares no code with src/timing/.
 */

const MINUTE = 60_000;

interface Sets {
  minute: Set<number>;
  hour: Set<number>;
  dayOfMonth: Set<number>;
  month: Set<number>;
  dayOfWeek: Set<number>;
  dayOfMonthIsStar: boolean;
  dayOfWeekIsStar: boolean;
  /** Vixie cron: neither minute nor hour starts with `*`. */
  fixedTime: boolean;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

/**
 * docs/reference/schedules.md#schedules's syntax for a valid field: items `*`, `a`, `a-b`, each with an
 * optional `/n`; `a/n` runs from `a` to `last` (`7/n` in day of week is 7 alone).
 */
function values(text: string, first: number, last: number, names: string[] = [], namesStart = 0): Set<number> {
  const number = (s: string) => (/^\d+$/.test(s) ? Number(s) : names.indexOf(s.toUpperCase()) + namesStart);
  const out = new Set<number>();
  for (const item of text.trim().split(',')) {
    const [base = '', stepText] = item.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    let from: number;
    let to: number;
    if (base === '*') [from, to] = [first, last];
    else if (base.includes('-')) [from, to] = base.split('-').map(number) as [number, number];
    else [from, to] = [number(base), stepText === undefined ? number(base) : Math.max(number(base), last)];
    for (let v = from; v <= to; v += step) out.add(v);
  }
  return out;
}

export function referenceSets(fields: CronFields): Sets {
  const dayOfWeek = values(fields.day_of_week, 0, 6, DAYS);
  if (dayOfWeek.has(7)) dayOfWeek.add(0);
  return {
    minute: values(fields.minute, 0, 59),
    hour: values(fields.hour, 0, 23),
    dayOfMonth: values(fields.day_of_month, 1, 31),
    month: values(fields.month, 1, 12, MONTHS, 1),
    dayOfWeek,
    dayOfMonthIsStar: fields.day_of_month.trim() === '*',
    dayOfWeekIsStar: fields.day_of_week.trim() === '*',
    fixedTime: !fields.minute.trim().startsWith('*') && !fields.hour.trim().startsWith('*'),
  };
}

/** Wall clock of a zone at a real instant, as a UTC-encoded Date; offsets are cached per quarter hour (no zone changes between). */
export class Zone {
  private readonly format: Intl.DateTimeFormat;
  private readonly offsets = new Map<number, number>();

  constructor(readonly name: string) {
    this.format = new Intl.DateTimeFormat('en-US', {
      timeZone: name,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
  }

  offset(instant: number): number {
    const quarter = Math.floor(instant / (15 * MINUTE)) * 15 * MINUTE;
    let offset = this.offsets.get(quarter);
    if (offset === undefined) {
      const p: Record<string, number> = {};
      for (const part of this.format.formatToParts(quarter)) p[part.type] = Number(part.value);
      offset = Date.UTC(p.year ?? 0, (p.month ?? 1) - 1, p.day ?? 1, p.hour ?? 0, p.minute ?? 0) - quarter;
      this.offsets.set(quarter, offset);
    }
    return offset;
  }

  wall(instant: number): number {
    return instant + this.offset(instant);
  }
}

function matchesWall(sets: Sets, wall: number): boolean {
  // Minute and hour by arithmetic (wall times here are after 1970): most minutes fail there, before a Date is made.
  if (!sets.minute.has(Math.floor(wall / MINUTE) % 60) || !sets.hour.has(Math.floor(wall / (60 * MINUTE)) % 24)) return false;
  const d = new Date(wall);
  if (!sets.month.has(d.getUTCMonth() + 1)) return false;
  const byDate = sets.dayOfMonth.has(d.getUTCDate());
  const byWeekday = sets.dayOfWeek.has(d.getUTCDay());
  if (sets.dayOfMonthIsStar) return byWeekday;
  if (sets.dayOfWeekIsStar) return byDate;
  return byDate || byWeekday;
}

/** Whether the job fires at the real minute `t` (DECISIONS "Cron", to the letter). */
function fires(sets: Sets, zone: Zone, t: number): boolean {
  const wall = zone.wall(t);
  // A wildcard job keeps to real time: every minute whose wall time matches.
  if (!sets.fixedTime) return matchesWall(sets, wall);
  // A fixed-time job whose wall times the clock jumped over runs once, as it jumps.
  const jumpedFrom = zone.wall(t - MINUTE) + MINUTE;
  for (let skipped = jumpedFrom; skipped < wall; skipped += MINUTE) if (matchesWall(sets, skipped)) return true;
  if (!matchesWall(sets, wall)) return false;
  // ... and runs a repeated wall time only at its first pass.
  for (let earlier = t - 3 * 60 * MINUTE; earlier < t; earlier += MINUTE) if (zone.wall(earlier) === wall) return false;
  return true;
}

/** The first firing minute strictly after `after` and at most `window` later, or null. */
export function referenceNextRun(sets: Sets, zone: Zone, after: number, window: number): number | null {
  const first = Math.floor(after / MINUTE) * MINUTE + MINUTE;
  for (let t = first; t <= after + window; t += MINUTE) if (fires(sets, zone, t)) return t;
  return null;
}

/** Whether the job fires at `t` (to check an answer beyond the window). */
export function referenceFires(sets: Sets, zone: Zone, t: number): boolean {
  return t % MINUTE === 0 && fires(sets, zone, t);
}
