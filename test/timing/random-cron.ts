import type { CronField, CronFields } from '../../src/timing/cron.js';

/**
 * Seeded random cron expressions for the differential tests: the same seed
 * gives the same expressions on every machine, so a disagreement found once
 * can be replayed.
 */

/** mulberry32: tiny, fast, and good enough to pick test cases. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

type Random = () => number;

const int = (random: Random, min: number, max: number) => min + Math.floor(random() * (max - min + 1));
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;

interface Range {
  min: number;
  /** The largest value a user may write (7 for day of week). */
  max: number;
  names?: readonly string[];
  namesStart?: number;
}

const RANGES: Record<CronField, Range> = {
  minute: { min: 0, max: 59 },
  hour: { min: 0, max: 23 },
  day_of_month: { min: 1, max: 31 },
  month: {
    min: 1,
    max: 12,
    names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'],
    namesStart: 1,
  },
  day_of_week: { min: 0, max: 7, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'], namesStart: 0 },
};

/** A value, sometimes written as a name (in a random letter case) where the field has names. */
function value(random: Random, range: Range, min = range.min, max = range.max): string {
  const n = int(random, min, max);
  const { names, namesStart } = range;
  if (names && namesStart !== undefined && random() < 0.3 && n - namesStart < names.length) {
    const name = names[n - namesStart] ?? '';
    return random() < 0.5 ? name : name.toLowerCase();
  }
  return String(n);
}

/** One list item: a value, a range, `*`, or a step over any of them. */
function item(random: Random, range: Range): string {
  const width = range.max - range.min + 1;
  // Mostly small steps (what people write), sometimes up to the field's width.
  const step = () => String(random() < 0.8 ? int(random, 2, Math.min(15, width)) : int(random, 1, width));
  switch (int(random, 0, 5)) {
    case 0:
      return value(random, range);
    case 1: {
      const from = int(random, range.min, range.max);
      const to = int(random, from, range.max);
      return `${value(random, range, from, from)}-${value(random, range, to, to)}`;
    }
    case 2:
      return `*/${step()}`;
    case 3: {
      const from = int(random, range.min, range.max);
      const to = int(random, from, range.max);
      return `${from}-${to}/${step()}`;
    }
    case 4:
      return `${int(random, range.min, range.max)}/${step()}`;
    default:
      return value(random, range);
  }
}

function field(random: Random, name: CronField): string {
  const range = RANGES[name];
  const roll = random();
  if (roll < 0.35) return '*';
  if (roll < 0.75) return item(random, range);
  return Array.from({ length: int(random, 2, 4) }, () => item(random, range)).join(',');
}

/** Late days with February, each pair able to match (`30 FEB` never does, and is invalid). */
const END_OF_MONTH: readonly (readonly [string, string])[] = [
  ['29', '2'],
  ['29', 'FEB'],
  ['29-31', '2'],
  ['28-31/3', 'feb'],
  ['29', '2,4'],
  ['31', '1-3'],
  ['30,31', 'FEB,MAR'],
  ['31', '2,12'],
];

/**
 * A random valid expression. Weighted towards what matters: the minute and
 * hour fields are often fixed (the DST rules of fixed-time jobs), both day
 * fields are often restricted together (the OR rule), and February with days
 * 29-31 comes up often.
 */
export function randomCron(random: Random): CronFields {
  const fixedTime = random() < 0.4;
  const minute = fixedTime ? String(int(random, 0, 59)) : field(random, 'minute');
  const hour = fixedTime
    ? random() < 0.5
      ? String(int(random, 0, 3))
      : field(random, 'hour').replace(/^\*/, '0-23')
    : field(random, 'hour');
  if (random() < 0.1) {
    const [day_of_month, month] = pick(random, END_OF_MONTH);
    return { minute, hour, day_of_month, month, day_of_week: '*' };
  }
  return {
    minute,
    hour,
    day_of_month: random() < 0.4 ? '*' : field(random, 'day_of_month'),
    month: random() < 0.6 ? '*' : field(random, 'month'),
    day_of_week: random() < 0.5 ? '*' : field(random, 'day_of_week'),
  };
}

export const cronText = (f: CronFields) => `${f.minute} ${f.hour} ${f.day_of_month} ${f.month} ${f.day_of_week}`;
