/** ISO 8601 with an explicit offset and no fractional seconds (SPEC 1): 2026-11-22T10:05:00+00:00. */
export function isoDate(ms: number): string;
export function isoDate(ms: number | null): string | null;
export function isoDate(ms: number | null): string | null {
  if (ms === null) return null;
  return new Date(ms).toISOString().slice(0, 19) + '+00:00';
}
