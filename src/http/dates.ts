const DAY_MS = 86_400_000;

const twoDigits = (n: number) => (n < 10 ? `0${n}` : `${n}`);

/**
 * The date part of the last day formatted. A page of entries mostly shares a
 * day or two, and toISOString was a measurable share of a listing's time
 * (docs/PERFORMANCE.md): the day comes from this one-entry cache, the time
 * from arithmetic (UTC has no daylight saving).
 */
let cachedDay = Number.NaN;
let cachedDayText = '';

/** ISO 8601 with an explicit offset and no fractional seconds (docs/reference/api.md#wire-conventions): 2026-11-22T10:05:00+00:00. */
export function isoDate(ms: number): string;
export function isoDate(ms: number | null): string | null;
export function isoDate(ms: number | null): string | null {
  if (ms === null) return null;
  const day = Math.floor(ms / DAY_MS);
  if (day !== cachedDay) {
    cachedDayText = new Date(day * DAY_MS).toISOString().slice(0, 11);
    cachedDay = day;
  }
  const seconds = Math.floor((ms - day * DAY_MS) / 1000);
  return `${cachedDayText}${twoDigits(Math.floor(seconds / 3600))}:${twoDigits(Math.floor(seconds / 60) % 60)}:${twoDigits(seconds % 60)}+00:00`;
}
