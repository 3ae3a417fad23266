import { describe, expect, it } from 'vitest';
import { checkCron, nextRunAfter, type CronField, type CronFields } from '../../src/timing/cron.js';

/**
 * The cron evaluator (docs/reference/schedules.md#schedules): syntax, the day OR rule, strictly-after
 * semantics and time-zone transitions. Every time is injected; no clock.
 */

const MINUTE = 60_000;

/** `'m h dom mon dow'` → fields; a field may not contain spaces here, the invalid cases build objects directly. */
function cron(expression: string): CronFields {
  const [minute = '', hour = '', day_of_month = '', month = '', day_of_week = ''] = expression.split(' ');
  return { minute, hour, day_of_month, month, day_of_week };
}

function withField(field: CronField, value: string): CronFields {
  return { ...cron('* * * * *'), [field]: value };
}

/** The next `count` runs, each strictly after the previous one, as ISO strings (UTC). */
function runs(expression: string, from: string, timezone: string, count: number): string[] {
  const out: string[] = [];
  let after = Date.parse(from);
  for (let i = 0; i < count; i++) {
    const next = nextRunAfter(cron(expression), after, timezone);
    if (!next) throw new Error(`no run after ${new Date(after).toISOString()}`);
    out.push(next.toISOString());
    after = next.getTime();
  }
  return out;
}

function next(expression: string, from: string, timezone = 'UTC'): string | null {
  return nextRunAfter(cron(expression), Date.parse(from), timezone)?.toISOString() ?? null;
}

describe('nextRunAfter in UTC', () => {
  it('returns the next matching minute, whether given a Date or epoch ms', () => {
    expect(next('5 10 * * *', '2026-07-01T00:00:00Z')).toBe('2026-07-01T10:05:00.000Z');
    const from = new Date('2026-07-01T00:00:00Z');
    expect(nextRunAfter(cron('5 10 * * *'), from, 'UTC')?.toISOString()).toBe('2026-07-01T10:05:00.000Z');
  });

  it('is strictly after: a time exactly on a match, or within its minute, gives the next match', () => {
    expect(next('5 10 * * *', '2026-07-01T10:05:00Z')).toBe('2026-07-02T10:05:00.000Z');
    expect(next('5 10 * * *', '2026-07-01T10:05:30.500Z')).toBe('2026-07-02T10:05:00.000Z');
    expect(next('5 10 * * *', '2026-07-01T10:04:59.999Z')).toBe('2026-07-01T10:05:00.000Z');
    expect(next('* * * * *', '2026-07-01T10:00:00Z')).toBe('2026-07-01T10:01:00.000Z');
    expect(next('* * * * *', '2026-07-01T10:00:59.999Z')).toBe('2026-07-01T10:01:00.000Z');
  });

  it('always lands on second 0, millisecond 0', () => {
    const result = nextRunAfter(cron('*/7 * * * *'), Date.parse('2026-07-01T10:03:27.123Z'), 'UTC');
    expect(result?.getUTCSeconds()).toBe(0);
    expect(result?.getUTCMilliseconds()).toBe(0);
    expect(result?.toISOString()).toBe('2026-07-01T10:07:00.000Z');
  });

  it('steps */n, a-b/n and a/n', () => {
    expect(runs('*/15 * * * *', '2026-07-01T10:00:00Z', 'UTC', 5)).toEqual([
      '2026-07-01T10:15:00.000Z',
      '2026-07-01T10:30:00.000Z',
      '2026-07-01T10:45:00.000Z',
      '2026-07-01T11:00:00.000Z',
      '2026-07-01T11:15:00.000Z',
    ]);
    // 1-5/2,8 is hours 1, 3, 5 and 8.
    expect(runs('0 1-5/2,8 * * *', '2026-07-01T00:00:00Z', 'UTC', 5)).toEqual([
      '2026-07-01T01:00:00.000Z',
      '2026-07-01T03:00:00.000Z',
      '2026-07-01T05:00:00.000Z',
      '2026-07-01T08:00:00.000Z',
      '2026-07-02T01:00:00.000Z',
    ]);
    // 50/5 is 50-59/5.
    expect(runs('50/5 * * * *', '2026-07-01T10:00:00Z', 'UTC', 3)).toEqual([
      '2026-07-01T10:50:00.000Z',
      '2026-07-01T10:55:00.000Z',
      '2026-07-01T11:50:00.000Z',
    ]);
  });

  it('takes lists', () => {
    expect(runs('0,30 6,18 * * *', '2026-07-01T00:00:00Z', 'UTC', 5)).toEqual([
      '2026-07-01T06:00:00.000Z',
      '2026-07-01T06:30:00.000Z',
      '2026-07-01T18:00:00.000Z',
      '2026-07-01T18:30:00.000Z',
      '2026-07-02T06:00:00.000Z',
    ]);
  });

  it('takes month names in any case, alone, in ranges and in lists', () => {
    expect(runs('0 0 1 jan-Mar *', '2026-04-15T00:00:00Z', 'UTC', 4)).toEqual([
      '2027-01-01T00:00:00.000Z',
      '2027-02-01T00:00:00.000Z',
      '2027-03-01T00:00:00.000Z',
      '2028-01-01T00:00:00.000Z',
    ]);
    expect(runs('0 0 1 JAN,jul *', '2026-04-15T00:00:00Z', 'UTC', 2)).toEqual([
      '2026-07-01T00:00:00.000Z',
      '2027-01-01T00:00:00.000Z',
    ]);
    expect(next('0 0 1 DEC *', '2026-04-15T00:00:00Z')).toBe('2026-12-01T00:00:00.000Z');
  });

  it('takes day names in any case', () => {
    // 2026-07-04 is a Saturday.
    expect(runs('0 9 * * mon-FRI', '2026-07-04T00:00:00Z', 'UTC', 2)).toEqual([
      '2026-07-06T09:00:00.000Z',
      '2026-07-07T09:00:00.000Z',
    ]);
    expect(next('0 9 * * Sat', '2026-07-01T00:00:00Z')).toBe('2026-07-04T09:00:00.000Z');
  });

  it('treats 0 and 7 (and SUN) as Sunday', () => {
    for (const sunday of ['0', '7', 'SUN', 'sun']) {
      expect(next(`0 0 * * ${sunday}`, '2026-07-01T00:00:00Z'), sunday).toBe('2026-07-05T00:00:00.000Z');
    }
    expect(runs('0 0 * * 5-7', '2026-07-01T00:00:00Z', 'UTC', 4)).toEqual([
      '2026-07-03T00:00:00.000Z',
      '2026-07-04T00:00:00.000Z',
      '2026-07-05T00:00:00.000Z',
      '2026-07-10T00:00:00.000Z',
    ]);
  });

  it('matches a day if either day field does when both are restricted (classic cron OR rule)', () => {
    // Fridays in July 2026: 3, 10, 17, 24, 31; plus the 13th.
    expect(runs('0 0 13 * FRI', '2026-07-01T00:00:00Z', 'UTC', 5)).toEqual([
      '2026-07-03T00:00:00.000Z',
      '2026-07-10T00:00:00.000Z',
      '2026-07-13T00:00:00.000Z',
      '2026-07-17T00:00:00.000Z',
      '2026-07-24T00:00:00.000Z',
    ]);
    // A step is a restriction too: odd days or Mondays.
    expect(runs('0 0 */2 * MON', '2026-07-01T12:00:00Z', 'UTC', 4)).toEqual([
      '2026-07-03T00:00:00.000Z',
      '2026-07-05T00:00:00.000Z',
      '2026-07-06T00:00:00.000Z',
      '2026-07-07T00:00:00.000Z',
    ]);
  });

  it('restricts by the other day field alone when one of them is *', () => {
    expect(runs('0 0 13 * *', '2026-07-01T00:00:00Z', 'UTC', 2)).toEqual([
      '2026-07-13T00:00:00.000Z',
      '2026-08-13T00:00:00.000Z',
    ]);
    expect(runs('0 0 * * FRI', '2026-07-01T00:00:00Z', 'UTC', 2)).toEqual([
      '2026-07-03T00:00:00.000Z',
      '2026-07-10T00:00:00.000Z',
    ]);
  });

  it('finds 29 February, even across the 2100 non-leap year', () => {
    expect(next('0 0 29 2 *', '2026-07-01T00:00:00Z')).toBe('2028-02-29T00:00:00.000Z');
    expect(next('0 0 29 2 *', '2096-03-01T00:00:00Z')).toBe('2104-02-29T00:00:00.000Z');
  });

  it('skips months too short for the day', () => {
    expect(runs('0 0 31 * *', '2026-04-01T00:00:00Z', 'UTC', 2)).toEqual([
      '2026-05-31T00:00:00.000Z',
      '2026-07-31T00:00:00.000Z',
    ]);
  });

  it('returns null for an expression that can never match', () => {
    expect(next('0 0 30 FEB *', '2026-07-01T00:00:00Z')).toBeNull();
    expect(next('0 0 31 4 *', '2026-07-01T00:00:00Z')).toBeNull();
  });

  it('throws for an invalid expression and an invalid reference time', () => {
    expect(() => nextRunAfter(cron('60 * * * *'), 0, 'UTC')).toThrow(/minute/);
    expect(() => nextRunAfter(cron('* * * * *'), new Date(Number.NaN), 'UTC')).toThrow(RangeError);
  });
});

describe('nextRunAfter in Europe/Berlin', () => {
  const zone = 'Europe/Berlin';

  it('reads the fields as Berlin wall time, in summer and in winter', () => {
    expect(next('0 6 * * *', '2026-07-01T00:00:00Z', zone)).toBe('2026-07-01T04:00:00.000Z');
    expect(next('0 6 * * *', '2026-01-10T00:00:00Z', zone)).toBe('2026-01-10T05:00:00.000Z');
  });

  describe('spring forward (2026-03-29, 02:00 CET → 03:00 CEST, i.e. 01:00Z)', () => {
    it('runs a fixed-time job whose time does not exist once, as the clock jumps', () => {
      expect(runs('30 2 * * *', '2026-03-28T12:00:00Z', zone, 3)).toEqual([
        '2026-03-29T01:00:00.000Z', // 03:00 CEST
        '2026-03-30T00:30:00.000Z', // 02:30 CEST
        '2026-03-31T00:30:00.000Z',
      ]);
      // Two skipped times still make one run.
      expect(runs('0,30 2 * * *', '2026-03-28T12:00:00Z', zone, 2)).toEqual([
        '2026-03-29T01:00:00.000Z',
        '2026-03-30T00:00:00.000Z',
      ]);
      // From the jump itself, the next run is the next day's.
      expect(next('30 2 * * *', '2026-03-29T01:00:00Z', zone)).toBe('2026-03-30T00:30:00.000Z');
    });

    it('runs a job at 03:00 at the jump as usual', () => {
      expect(next('0 3 * * *', '2026-03-28T12:00:00Z', zone)).toBe('2026-03-29T01:00:00.000Z');
    });

    it('keeps a wildcard job on real time: every 15 real minutes across the jump', () => {
      expect(runs('*/15 * * * *', '2026-03-29T00:30:00Z', zone, 3)).toEqual([
        '2026-03-29T00:45:00.000Z', // 01:45 CET
        '2026-03-29T01:00:00.000Z', // 03:00 CEST
        '2026-03-29T01:15:00.000Z',
      ]);
    });

    it('gives a wildcard job limited to the missing hour no run that day', () => {
      expect(next('*/15 2 * * *', '2026-03-28T12:00:00Z', zone)).toBe('2026-03-30T00:00:00.000Z');
    });
  });

  describe('fall back (2026-10-25, 03:00 CEST → 02:00 CET, i.e. 01:00Z)', () => {
    it('runs a fixed-time job in the repeated hour once, at the first pass', () => {
      expect(runs('30 2 * * *', '2026-10-24T12:00:00Z', zone, 3)).toEqual([
        '2026-10-25T00:30:00.000Z', // 02:30 CEST
        '2026-10-26T01:30:00.000Z', // 02:30 CET, the next day
        '2026-10-27T01:30:00.000Z',
      ]);
      expect(next('30 2 * * *', '2026-10-25T00:10:00Z', zone)).toBe('2026-10-25T00:30:00.000Z');
      // From inside the second pass (02:10 CET) the run already happened.
      expect(next('30 2 * * *', '2026-10-25T01:10:00Z', zone)).toBe('2026-10-26T01:30:00.000Z');
    });

    it('runs */15 every 15 real minutes through the repeated hour', () => {
      const results = runs('*/15 * * * *', '2026-10-24T23:50:00Z', zone, 12);
      expect(results[0]).toBe('2026-10-25T00:00:00.000Z');
      const gaps = results.slice(1).map((iso, i) => Date.parse(iso) - Date.parse(results[i] ?? ''));
      expect(gaps).toEqual(new Array(11).fill(15 * MINUTE));
    });

    it('runs an hourly job in both passes', () => {
      expect(runs('0 * * * *', '2026-10-24T23:30:00Z', zone, 3)).toEqual([
        '2026-10-25T00:00:00.000Z', // 02:00 CEST
        '2026-10-25T01:00:00.000Z', // 02:00 CET
        '2026-10-25T02:00:00.000Z', // 03:00 CET
      ]);
    });
  });

  it('gives whole-minute instants strictly after the reference time all around both transitions', () => {
    const expressions = ['*/7 * * * *', '30 2 * * *', '0,30 1-3 * * *', '*/20 2 * * *', '59 * * * *'];
    for (const day of ['2026-03-29T00:00:00Z', '2026-10-25T00:00:00Z']) {
      for (let after = Date.parse(day) - 3_600_000; after < Date.parse(day) + 4 * 3_600_000; after += 7 * MINUTE + 13_000) {
        for (const expression of expressions) {
          const result = nextRunAfter(cron(expression), after, zone);
          expect(result, expression).not.toBeNull();
          const ms = result?.getTime() ?? 0;
          expect(ms, expression).toBeGreaterThan(after);
          expect(ms % MINUTE, expression).toBe(0);
        }
      }
    }
  });
});

describe('nextRunAfter in other zones', () => {
  it('handles America/New_York (02:00 EST → 03:00 EDT on 2026-03-08; 02:00 EDT → 01:00 EST on 2026-11-01)', () => {
    const zone = 'America/New_York';
    expect(runs('30 2 * * *', '2026-03-07T12:00:00Z', zone, 2)).toEqual([
      '2026-03-08T07:00:00.000Z', // 03:00 EDT
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
    ]);
    expect(runs('30 1 * * *', '2026-10-31T12:00:00Z', zone, 2)).toEqual([
      '2026-11-01T05:30:00.000Z', // 01:30 EDT, first pass only
      '2026-11-02T06:30:00.000Z', // 01:30 EST
    ]);
    expect(next('0 12 * * *', '2026-07-01T00:00:00Z', zone)).toBe('2026-07-01T16:00:00.000Z');
  });

  it('handles a half-hour shift (Australia/Lord_Howe, 02:00 → 02:30 on 2026-10-04)', () => {
    expect(next('15 2 * * *', '2026-10-03T12:00:00Z', 'Australia/Lord_Howe')).toBe('2026-10-03T15:30:00.000Z'); // 02:30 +11
  });
});

describe('checkCron', () => {
  const now = Date.parse('2026-07-01T00:00:00Z');

  it('accepts the full syntax', () => {
    for (const expression of [
      '* * * * *',
      '*/15 1-5/2,8 1,15 JAN-MAR mon-fri',
      '0 0 29 2 *',
      '59 23 31 12 7',
      '0-59/10 */6 1-31 1-12 0-7',
    ]) {
      expect(checkCron(cron(expression), 'UTC', now), expression).toEqual({ ok: true });
    }
    expect(checkCron(cron('5 10 * * *'), 'Europe/Berlin', new Date(now))).toEqual({ ok: true });
  });

  it('accepts 30 February when a weekday can match instead (OR rule)', () => {
    expect(checkCron(cron('0 0 30 2 MON'), 'UTC', now)).toEqual({ ok: true });
  });

  const invalid: [CronField, string][] = [
    ['minute', '60'],
    ['minute', '-1'],
    ['minute', '*/0'],
    ['minute', '5/0'],
    ['minute', '*/61'],
    ['minute', '5-1'],
    ['minute', 'abc'],
    ['minute', '1.5'],
    ['minute', ''],
    ['minute', '   '],
    ['minute', '1 2'],
    ['minute', '1,,2'],
    ['minute', '1,'],
    ['minute', '*/'],
    ['minute', '1-2-3'],
    ['minute', '**'],
    ['minute', '?'],
    ['hour', '24'],
    ['hour', '*/x'],
    ['day_of_month', '0'],
    ['day_of_month', '32'],
    ['day_of_month', 'L'],
    ['month', '0'],
    ['month', '13'],
    ['month', 'JANUARY'],
    ['month', 'MON'],
    ['day_of_week', '8'],
    ['day_of_week', 'JAN'],
    ['day_of_week', 'SAT-SUN'],
    ['day_of_week', '5#3'],
  ];
  it.each(invalid)('rejects %s %j, naming the field', (field, value) => {
    const result = checkCron(withField(field, value), 'UTC', now);
    expect(result).toMatchObject({ ok: false, field });
    const label = field.replaceAll('_', ' ');
    expect(result.ok ? '' : result.message).toMatch(new RegExp(`^The ${label} field is not a valid cron expression`));
  });

  it('names the first offending field when several are wrong', () => {
    expect(checkCron(cron('60 24 * * *'), 'UTC', now)).toMatchObject({ ok: false, field: 'minute' });
  });

  it('rejects a field that is not a string at run time', () => {
    const fields = { ...cron('* * * * *'), hour: 5 as unknown as string };
    expect(checkCron(fields, 'UTC', now)).toMatchObject({ ok: false, field: 'hour' });
  });

  it.each(['0 0 30 FEB *', '0 0 31 apr *', '0 0 30,31 2 *', '0 0 31 2,4,6,9,11 *'])(
    'rejects %j, which never matches, as cron',
    (expression) => {
      expect(checkCron(cron(expression), 'UTC', now)).toMatchObject({
        ok: false,
        field: 'cron',
        message: expect.stringContaining('never'),
      });
    },
  );
});
