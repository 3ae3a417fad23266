/** Wings' console throttle (docs/reference/power-and-console.md#servers-outlive-the-service), on a clock the test moves: windows, activations, decay, the breach. */
import { describe, expect, it } from 'vitest';
import { ConsoleThrottle, DEFAULT_THROTTLE } from '../../src/modules/websocket/console-throttle.js';

function throttle(settings = DEFAULT_THROTTLE) {
  const clock = { now: 0 };
  return { clock, throttle: new ConsoleThrottle(settings, () => clock.now) };
}

/** `count` lines at the current instant; the verdicts that are not `forward`. */
function burst(t: ConsoleThrottle, count: number): string[] {
  const verdicts: string[] = [];
  for (let i = 0; i < count; i++) {
    const verdict = t.line();
    if (verdict !== 'forward') verdicts.push(verdict);
  }
  return verdicts;
}

describe('the console throttle', () => {
  it('forwards 2,000 lines in 100 ms, strikes once at the 2,001st, drops the rest of the window', () => {
    const { throttle: t } = throttle();
    expect(burst(t, 2000)).toEqual([]);
    const over = burst(t, 1000);
    expect(over[0]).toBe('strike');
    expect(over.slice(1).every((verdict) => verdict === 'drop')).toBe(true);
  });

  it('starts each 100 ms window afresh', () => {
    const { clock, throttle: t } = throttle();
    expect(burst(t, 2000)).toEqual([]);
    clock.now = 100;
    expect(burst(t, 2000)).toEqual([]);
  });

  it('breaches at the fifth activation within the decay period, once', () => {
    const { clock, throttle: t } = throttle();
    const verdicts: string[] = [];
    for (let window = 0; window < 6; window++) {
      clock.now = window * 100;
      verdicts.push(...burst(t, 2001).filter((verdict) => verdict !== 'drop'));
    }
    expect(verdicts).toEqual(['strike', 'strike', 'strike', 'strike', 'breach', 'strike']);
  });

  it('forgets one activation every 10 s', () => {
    const { clock, throttle: t } = throttle();
    const strike = (at: number) => {
      clock.now = at;
      return burst(t, 2001).filter((verdict) => verdict !== 'drop')[0];
    };
    expect([strike(0), strike(100), strike(200), strike(300)]).toEqual(['strike', 'strike', 'strike', 'strike']);
    // One decayed at 10 s: the fifth strike is the fourth activation.
    expect(strike(10_050)).toBe('strike');
    expect(strike(10_150)).toBe('breach');
  });

  it('never breaches a server that strikes less often than activations decay', () => {
    const { clock, throttle: t } = throttle();
    const verdicts: string[] = [];
    for (let i = 0; i < 30; i++) {
      clock.now = i * 10_500;
      verdicts.push(...burst(t, 2001).filter((verdict) => verdict !== 'drop'));
    }
    expect(verdicts).not.toContain('breach');
  });

  it('is a clean slate after reset (a new start)', () => {
    const { clock, throttle: t } = throttle({ lines: 1, periodMs: 100, maxTriggers: 2, decayMs: 10_000 });
    expect(burst(t, 2)).toEqual(['strike']);
    t.reset();
    clock.now = 100;
    expect(burst(t, 2)).toEqual(['strike']);
    clock.now = 200;
    expect(burst(t, 2)).toEqual(['breach']);
  });
});
