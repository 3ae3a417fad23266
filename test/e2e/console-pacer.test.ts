import { describe, expect, it } from 'vitest';
import { FrameLimiter } from '../../src/modules/websocket/websocket.frames.js';
import { FramePacer } from '../../web/src/lib/frame-pacer.js';

/**
 * The console's mirror of the socket's rate limits (web/src/lib/frame-pacer.ts) against the
 * service's own limiter (src/modules/websocket/websocket.frames.ts), frame by frame on one clock:
 * whatever the console sends, the socket takes, even when frames arrive bunched up; and the
 * console holds back no more than it must. A change to either side's limits fails here.
 */

/** A console and the socket it talks to: the socket sees each frame `delayMs` after it was sent. */
function pair() {
  let now = 1_000_000;
  const pacer = new FramePacer(() => now);
  const limiter = new FrameLimiter(() => now);
  return {
    advance(ms: number) {
      now += ms;
    },
    /** Sends when the console would; answers what the socket made of it, or 'held' (never sent). */
    send(event: string, delayMs = 0): 'held' | 'allow' | 'refused' {
      if (!pacer.admit(event)) return 'held';
      now += delayMs;
      const decision = limiter.admitRaw() === 'allow' ? limiter.admitEvent(event) : 'refused';
      now -= delayMs;
      return decision === 'allow' ? 'allow' : 'refused';
    },
    exhaust: (event: string) => pacer.exhaust(event),
  };
}

describe('the console paces its socket frames as the socket limits them', () => {
  it('sends 10 commands at once and holds the 11th; one more a little over a second later', () => {
    const link = pair();
    for (let i = 0; i < 10; i++) expect(link.send('send command'), `command ${i + 1}`).toBe('allow');
    expect(link.send('send command')).toBe('held');
    link.advance(1_000);
    expect(link.send('send command')).toBe('held');
    link.advance(150);
    expect(link.send('send command')).toBe('allow');
    expect(link.send('send command')).toBe('held');
  });

  it('never sends a frame the socket refuses, with arrival delays of 0–90 ms varying from frame to frame (bunched up on the way)', () => {
    const link = pair();
    const events = ['send command', 'send command', 'send stats', 'send command', 'send logs', 'set state', 'auth'];
    let sent = 0;
    let held = 0;
    // A deterministic walk: gaps of 0–400 ms, delays of 0–90 ms.
    let seed = 7;
    const next = (n: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) % n;
    for (let i = 0; i < 5_000; i++) {
      link.advance(next(400));
      const answer = link.send(events[next(events.length)]!, next(90));
      expect(answer, `frame ${i}`).not.toBe('refused');
      if (answer === 'allow') sent++;
      else held++;
    }
    expect(sent).toBeGreaterThan(held);
  });

  it('after the socket said `throttled`, holds that kind back until the socket has room again', () => {
    const link = pair();
    for (let i = 0; i < 10; i++) link.send('send command');
    link.advance(1_150);
    // The socket refused one anyway (it counted a frame the console does not know of): it will not say so twice.
    link.exhaust('send command');
    expect(link.send('send command')).toBe('held');
    link.advance(1_150);
    expect(link.send('send command')).toBe('allow');
    link.exhaust('global');
    expect(link.send('send stats')).toBe('held');
    link.advance(250);
    expect(link.send('send stats')).toBe('allow');
  });
});
