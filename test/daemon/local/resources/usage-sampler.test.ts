import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { readGroupUsage } from '../../../../src/daemon/local/resources/group-usage.js';
import { UsageSampler, type UsageReading } from '../../../../src/daemon/local/resources/usage-sampler.js';

const S1 = 'server-1';
const S2 = 'server-2';

/** A reader that returns what the test last set (or throws it). */
function fakeReader(initial: UsageReading | null) {
  const reader = {
    next: initial as UsageReading | null | Error,
    reads: 0,
    read: (): UsageReading | null => {
      reader.reads++;
      if (reader.next instanceof Error) throw reader.next;
      return reader.next;
    },
  };
  return reader;
}

describe('UsageSampler', () => {
  const samplers: UsageSampler[] = [];
  afterEach(() => {
    for (const sampler of samplers.splice(0)) sampler.close();
    vi.useRealTimers();
  });

  function sampler(opts: ConstructorParameters<typeof UsageSampler>[0] = {}) {
    const clock = { ms: 0 };
    const made = new UsageSampler({ now: () => clock.ms, ...opts });
    samplers.push(made);
    return { sampler: made, clock };
  }

  it('gives CPU as a percent of one core between the last two samples, 0 until there are two', () => {
    const { sampler: s, clock } = sampler();
    const reader = fakeReader({ memoryBytes: 100, cpuUsageNs: 5e9 });
    s.track(S1, reader.read);
    expect(s.latest(S1)).toEqual({ memoryBytes: 100, cpuAbsolute: 0 });

    clock.ms = 2_000;
    reader.next = { memoryBytes: 200, cpuUsageNs: 6e9 }; // 1 s of CPU in 2 s
    expect(s.sampleNow(S1)).toEqual({ memoryBytes: 200, cpuAbsolute: 50 });

    clock.ms = 4_000;
    reader.next = { memoryBytes: 300, cpuUsageNs: 10e9 }; // two cores busy
    s.sampleNow(S1);
    expect(s.latest(S1)).toEqual({ memoryBytes: 300, cpuAbsolute: 200 });

    clock.ms = 7_000;
    reader.next = { memoryBytes: 300, cpuUsageNs: 10e9 + 1e6 }; // a third of a millisecond a second
    expect(s.latest(S1)).toEqual({ memoryBytes: 300, cpuAbsolute: 200 });
    expect(s.sampleNow(S1)).toEqual({ memoryBytes: 300, cpuAbsolute: 0.033 });
    expect(s.latest('unknown')).toBeNull();
    expect(s.sampleNow('unknown')).toBeNull();
  });

  it('updates only memory for a reading too close to the last: a rate over a few ms would be noise', () => {
    const { sampler: s, clock } = sampler();
    const reader = fakeReader({ memoryBytes: 100, cpuUsageNs: 0 });
    s.track(S1, reader.read);
    clock.ms = 2_000;
    reader.next = { memoryBytes: 100, cpuUsageNs: 1e9 };
    s.sampleNow(S1);
    clock.ms = 2_010;
    reader.next = { memoryBytes: 150, cpuUsageNs: 1.02e9 }; // two clock ticks in 10 ms: "200%"
    expect(s.sampleNow(S1)).toEqual({ memoryBytes: 150, cpuAbsolute: 50 });
    clock.ms = 4_000;
    reader.next = { memoryBytes: 150, cpuUsageNs: 2e9 };
    expect(s.sampleNow(S1)).toEqual({ memoryBytes: 150, cpuAbsolute: 50 });
  });

  it('keeps the last figures when a read throws, and says so', () => {
    const errors: [string, unknown][] = [];
    const { sampler: s, clock } = sampler({ onReadError: (uuid, err) => errors.push([uuid, err]) });
    const reader = fakeReader({ memoryBytes: 100, cpuUsageNs: 0 });
    s.track(S1, reader.read);
    clock.ms = 2_000;
    reader.next = { memoryBytes: 100, cpuUsageNs: 2e9 };
    s.sampleNow(S1);
    clock.ms = 4_000;
    const failure = new Error('EACCES');
    reader.next = failure;
    expect(s.sampleNow(S1)).toEqual({ memoryBytes: 100, cpuAbsolute: 100 });
    expect(errors).toEqual([[S1, failure]]);
    // The next good reading takes its rate from the last good one.
    clock.ms = 6_000;
    reader.next = { memoryBytes: 100, cpuUsageNs: 3e9 };
    expect(s.sampleNow(S1)).toEqual({ memoryBytes: 100, cpuAbsolute: 25 });
  });

  it('has no figures while the processes are gone, and starts the rate afresh when they are back', () => {
    const { sampler: s, clock } = sampler();
    const reader = fakeReader({ memoryBytes: 100, cpuUsageNs: 9e9 });
    s.track(S1, reader.read);
    clock.ms = 2_000;
    reader.next = null;
    expect(s.sampleNow(S1)).toBeNull();
    expect(s.latest(S1)).toBeNull();
    clock.ms = 4_000;
    reader.next = { memoryBytes: 50, cpuUsageNs: 1e9 }; // a new process: its counter starts again
    expect(s.sampleNow(S1)).toEqual({ memoryBytes: 50, cpuAbsolute: 0 });
    clock.ms = 6_000;
    reader.next = { memoryBytes: 50, cpuUsageNs: 2e9 };
    expect(s.sampleNow(S1)).toEqual({ memoryBytes: 50, cpuAbsolute: 50 });
    // A counter that went down (processes reaped from outside the group took their time along) gives 0, not a negative rate.
    clock.ms = 8_000;
    reader.next = { memoryBytes: 50, cpuUsageNs: 1.5e9 };
    expect(s.sampleNow(S1)).toEqual({ memoryBytes: 50, cpuAbsolute: 0 });
  });

  it('runs one unref’d timer for all servers while any is tracked; track replaces, untrack and close stop', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const { sampler: s, clock } = sampler({ intervalMs: 1_000 });
    expect(vi.getTimerCount()).toBe(0);
    const one = fakeReader({ memoryBytes: 1, cpuUsageNs: 0 });
    const two = fakeReader({ memoryBytes: 2, cpuUsageNs: 0 });
    s.track(S1, one.read);
    s.track(S2, two.read);
    expect(vi.getTimerCount()).toBe(1);
    expect([one.reads, two.reads]).toEqual([1, 1]);

    clock.ms = 1_000;
    two.next = { memoryBytes: 2, cpuUsageNs: 0.5e9 };
    vi.advanceTimersByTime(1_000);
    expect([one.reads, two.reads]).toEqual([2, 2]);
    expect(s.latest(S2)).toEqual({ memoryBytes: 2, cpuAbsolute: 50 });

    // A restart: the new reader, and no rate across the two processes.
    const again = fakeReader({ memoryBytes: 3, cpuUsageNs: 0 });
    s.track(S2, again.read);
    expect(s.latest(S2)).toEqual({ memoryBytes: 3, cpuAbsolute: 0 });
    expect(vi.getTimerCount()).toBe(1);

    s.untrack(S1);
    expect(s.latest(S1)).toBeNull();
    expect(vi.getTimerCount()).toBe(1);
    s.untrack(S2);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(5_000);
    expect([one.reads, two.reads, again.reads]).toEqual([2, 2, 1]);

    s.track(S1, one.read);
    expect(vi.getTimerCount()).toBe(1);
    s.close();
    expect(vi.getTimerCount()).toBe(0);
    expect(s.latest(S1)).toBeNull();
  });

  it('does not keep the process alive', () => {
    const s = new UsageSampler();
    samplers.push(s);
    s.track(S1, () => null);
    const timer = (s as unknown as { timer: NodeJS.Timeout }).timer;
    expect(timer.hasRef()).toBe(false);
  });

  describe.runIf(fs.existsSync('/proc/self/stat'))('with a real process group', () => {
    let busy: ChildProcess | undefined;
    afterEach(async () => {
      if (busy === undefined) return;
      try {
        process.kill(-busy.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      if (busy.exitCode === null && busy.signalCode === null) await new Promise((resolve) => busy!.once('exit', resolve));
      busy = undefined;
    });

    it('reports about one core for a busy loop, over a 2 s interval', async () => {
      busy = spawn(process.execPath, ['-e', 'for (;;) {}'], { detached: true, stdio: 'ignore' });
      const pgid = busy.pid!;
      const s = new UsageSampler(); // the real clock and the 2 s interval
      samplers.push(s);
      s.track('busy', () => readGroupUsage(pgid));
      await new Promise((resolve) => setTimeout(resolve, 2_300));
      const figures = s.latest('busy')!;

      // One busy process gets one core, unless more runnable processes than
      // cores share them: with the load average above the core count (2 on
      // CI, where other test files run alongside), it gets about
      // cores / (load + 1) of one, so the bound drops to half of that.
      const cores = os.availableParallelism();
      const [load] = os.loadavg();
      const lower = load! > cores ? Math.min(50, (50 * cores) / (load! + 1)) : 50;
      expect(figures.cpuAbsolute, `load ${load} on ${cores} cores`).toBeGreaterThanOrEqual(lower);
      expect(figures.cpuAbsolute).toBeLessThanOrEqual(105);
      expect(figures.memoryBytes).toBeGreaterThan(10 * 1024 * 1024); // a Node process
    });
  });
});
