/**
 * Fault injection for the durability tests (test/durability/), and nothing
 * else. `QUETZAL_TEST_CRASH_AT=<point>[:<n>]` makes this process kill itself
 * with SIGKILL the n-th time (default the first) it passes the named point,
 * so a test can stop the service at an exact instant of a restore or backup.
 * Read once at start; unset (always, outside tests) every call is a no-op.
 * The points are listed in docs/RESTORE.md "Crash safety" (the database ones also in docs/DATABASES.md).
 */
const setting = parse(process.env.QUETZAL_TEST_CRASH_AT);
let passes = 0;

function parse(value: string | undefined): { point: string; nth: number } | null {
  if (!value) return null;
  const match = /^([a-z-]+)(?::(\d+))?$/.exec(value);
  if (!match) return null;
  return { point: match[1]!, nth: match[2] === undefined ? 1 : Math.max(1, Number(match[2])) };
}

export function crashPoint(point: string): void {
  if (setting === null || setting.point !== point) return;
  passes += 1;
  if (passes === setting.nth) process.kill(process.pid, 'SIGKILL');
}

/** True when a test asked to crash at `point` (for points that need a watcher, like "mid-write"). */
export function crashPointArmed(point: string): boolean {
  return setting !== null && setting.point === point;
}
