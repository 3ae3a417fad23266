import { expect, it } from 'vitest';
import { isoDate } from '../../src/http/dates.js';

/** docs/reference/api.md#wire-conventions: ISO 8601, explicit offset, no fractional seconds; null stays null. */
it('formats every instant as toISOString would, without the fraction and with +00:00', () => {
  expect(isoDate(null)).toBeNull();
  expect(isoDate(Date.UTC(2026, 10, 22, 10, 5, 0, 999))).toBe('2026-11-22T10:05:00+00:00');
  expect(isoDate(0)).toBe('1970-01-01T00:00:00+00:00');
  expect(isoDate(-1)).toBe('1969-12-31T23:59:59+00:00');
  // Across many days, back and forth (the day cache must never serve a stale day).
  let ms = Date.UTC(2024, 1, 28, 23, 59, 58, 500);
  for (let i = 0; i < 5_000; i++) {
    ms += (i % 2 === 0 ? 1 : -1) * (i * 7_919_113);
    expect(isoDate(ms)).toBe(`${new Date(ms).toISOString().slice(0, 19)}+00:00`);
  }
});
