import { describe, expect, it } from 'vitest';
import { defaultCronSource, type CronFields } from '../../src/timing/cron.js';
import { referenceFires, referenceNextRun, referenceSets, Zone } from './cron-reference.js';
import { cronText, randomCron, seededRandom } from './random-cron.js';

/**
 * The differential test of the cron source (docs/DECISIONS.md "Cron"):
 * seeded random expressions × zones × successive next runs from instants
 * around each DST change of 2026 and 2027, the default source against the
 * brute-force reference of cron-reference.ts. A disagreement prints the
 * expression, zone and instant, and replays with the same seed.
 */

const SEED = 20261124;
const EXPRESSIONS = 300;
const ZONES = ['UTC', 'Europe/London', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata'];
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** How far the reference searches; a later answer is checked to fire, and nothing before it in the window. */
const WINDOW = 26 * HOUR;
/** Successive runs followed from each starting instant. */
const SUCCESSIVE = 3;
const FROM = Date.UTC(2026, 0, 1);
const TO = Date.UTC(2028, 0, 1);

/**
 * The instants in [FROM, TO) where the zone's offset changes: sampled every
 * six hours (no zone changes twice within that), then pinned to the quarter hour.
 */
function transitions(zone: Zone): number[] {
  const QUARTER = 15 * MINUTE;
  const found: number[] = [];
  for (let t = FROM + 6 * HOUR; t < TO; t += 6 * HOUR) {
    if (zone.offset(t) === zone.offset(t - 6 * HOUR)) continue;
    for (let q = t - 6 * HOUR + QUARTER; q <= t; q += QUARTER) if (zone.offset(q) !== zone.offset(q - QUARTER)) found.push(q);
  }
  return found;
}

describe('the default cron source against a brute-force reference', () => {
  it('agrees on every next run, around every DST change of two years, in five zones', () => {
    const random = seededRandom(SEED);
    const zones = ZONES.map((name) => new Zone(name));
    const changes = new Map(zones.map((zone) => [zone.name, transitions(zone)]));
    // The test would prove nothing if the zones had no changes to cross.
    expect(changes.get('Europe/London')).toHaveLength(4);
    expect(changes.get('Australia/Lord_Howe')).toHaveLength(4);
    expect(changes.get('Asia/Kolkata')).toHaveLength(0);

    const disagreements: string[] = [];
    let compared = 0;
    for (let i = 0; i < EXPRESSIONS; i++) {
      const fields: CronFields = randomCron(random);
      const sets = referenceSets(fields);
      for (const zone of zones) {
        const zoneChanges = changes.get(zone.name) ?? [];
        // One instant shortly before one of the zone's changes (a random one), and one anywhere.
        const nearChange =
          zoneChanges.length > 0
            ? (zoneChanges[Math.floor(random() * zoneChanges.length)] ?? FROM) - Math.floor(random() * 6 * 60) * MINUTE
            : FROM;
        const anywhere = FROM + Math.floor(random() * (TO - FROM));
        for (const start of [nearChange, anywhere]) {
          let after = start;
          for (let k = 0; k < SUCCESSIVE; k++) {
            const actual = defaultCronSource.nextRunAfter(fields, after, zone.name)?.getTime() ?? null;
            const expected = referenceNextRun(sets, zone, after, WINDOW);
            compared += 1;
            const agrees =
              expected !== null
                ? actual === expected
                : actual !== null && actual > after + WINDOW && referenceFires(sets, zone, actual);
            if (!agrees) {
              const show = (t: number | null) => (t === null ? 'none' : new Date(t).toISOString());
              disagreements.push(
                `${cronText(fields)} in ${zone.name} after ${show(after)}: source ${show(actual)}, reference ${show(expected)}`,
              );
              break;
            }
            if (actual === null) break;
            after = actual;
          }
        }
      }
    }
    expect(disagreements.slice(0, 10)).toEqual([]);
    expect(compared).toBeGreaterThan(EXPRESSIONS * ZONES.length * 2);
  });

  it('answers with whole minutes strictly after the reference time', () => {
    const random = seededRandom(SEED + 1);
    for (let i = 0; i < 300; i++) {
      const fields = randomCron(random);
      const after = FROM + random() * (TO - FROM);
      const next = defaultCronSource.nextRunAfter(fields, after, 'Europe/London');
      if (next === null) continue;
      expect(next.getTime(), cronText(fields)).toBeGreaterThan(after);
      expect(next.getTime() % MINUTE, cronText(fields)).toBe(0);
    }
  });
});
