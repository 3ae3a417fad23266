/**
 * Cron benchmark: the cost of one next-run computation of the default cron
 * source (timing/cron.ts), in process, per call:
 *
 * - warm: expressions already seen (parsed, and their evaluator built), the
 *   scheduler's steady state: every claim computes the next time of schedules
 *   whose expressions it has met before;
 * - cold: an expression met for the first time (parse, build, evaluate), what
 *   creating or editing a schedule costs.
 *
 * Both in UTC and in Europe/London, over seeded random expressions (the
 * differential test's generator) and instants spread over 2026-2027.
 *
 *   npm run bench:cron -- [--calls 20000]
 */
import { defaultCronSource, type CronFields, type CronSource } from '../src/timing/cron.js';
import { randomCron, seededRandom } from '../test/timing/random-cron.js';

const FROM = Date.UTC(2026, 0, 1);
const SPAN = Date.UTC(2028, 0, 1) - FROM;

function argument(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? Number(process.argv[index + 1]) : fallback;
}

/** Microseconds per call of `source` over `cases`. */
function microsPerCall(source: CronSource, cases: readonly { fields: CronFields; after: number }[], zone: string): number {
  const started = process.hrtime.bigint();
  let sink = 0;
  for (const { fields, after } of cases) sink += source.nextRunAfter(fields, after, zone)?.getTime() ?? 0;
  const elapsed = Number(process.hrtime.bigint() - started) / 1000;
  if (sink === 42) console.log('');
  return elapsed / cases.length;
}

function measure(source: CronSource, calls: number, seed: number) {
  const random = seededRandom(seed);
  const warmExpressions = Array.from({ length: 50 }, () => randomCron(random));
  const instants = () => FROM + Math.floor(random() * SPAN);
  const rows: { zone: string; warm: number; cold: number }[] = [];
  for (const zone of ['UTC', 'Europe/London']) {
    const warmCases = Array.from({ length: calls }, (_, i) => ({
      fields: warmExpressions[i % warmExpressions.length]!,
      after: instants(),
    }));
    microsPerCall(source, warmCases.slice(0, 1000), zone); // builds the evaluators, and lets the JIT settle
    const warm = microsPerCall(source, warmCases, zone);
    // Minutes 0-59 prefixed onto each field make every cold expression one never seen before.
    const coldCases = Array.from({ length: Math.min(calls, 5000) + 1000 }, (_, i) => {
      const fields = randomCron(random);
      return {
        fields: { ...fields, minute: `${i % 60},${fields.minute}`, hour: `${Math.floor(i / 60) % 24},${fields.hour}` },
        after: instants(),
      };
    });
    microsPerCall(source, coldCases.slice(0, 1000), zone); // the JIT again, for parsing and building
    const cold = microsPerCall(source, coldCases.slice(1000), zone);
    rows.push({ zone, warm, cold });
  }
  return rows;
}

const calls = argument('calls', 20_000);
console.log(`next run after an instant, ${calls} calls per figure (cold: ${Math.min(calls, 5000)} new expressions)`);
console.log('| zone | warm µs/call | cold µs/call |');
console.log('|---|---|---|');
for (const row of measure(defaultCronSource, calls, 7))
  console.log(`| ${row.zone} | ${row.warm.toFixed(2)} | ${row.cold.toFixed(1)} |`);
