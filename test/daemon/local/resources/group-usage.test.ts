import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { readGroupUsage } from '../../../../src/daemon/local/resources/group-usage.js';

/** Polls `check` until it holds; fails with `what` after `timeoutMs`. */
async function waitFor(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** VmRSS of /proc/<pid>/status in bytes (the figure `ps` and `top` show). */
function vmRss(pid: number): number {
  const line = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB$/m);
  if (line === null) throw new Error(`no VmRSS for ${pid}`);
  return Number(line[1]) * 1024;
}

function cmdline(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

describe.runIf(fs.existsSync('/proc/self/stat'))('readGroupUsage', () => {
  const groups: ChildProcess[] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    for (const leader of groups.splice(0)) {
      try {
        process.kill(-leader.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      if (leader.exitCode === null && leader.signalCode === null) await new Promise((resolve) => leader.once('exit', resolve));
    }
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  /**
   * A process group of two: a busy Node loop leading it and a sleeping child,
   * the latter run under a name with spaces and parentheses (its stat's
   * command field then reads `(we) ird (sleep)`).
   */
  async function busyGroup(): Promise<{ pgid: number; sleeperPid: number }> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-group-usage-'));
    dirs.push(dir);
    const sleeper = path.join(dir, 'we) ird (sleep');
    fs.symlinkSync(fs.realpathSync('/bin/sleep'), sleeper);
    const leader = spawn('sh', ['-c', `"$1" 1000 & echo $!; exec "$2" -e 'for (;;) {}'`, 'sh', sleeper, process.execPath], {
      detached: true,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    groups.push(leader);
    const [line] = (await once(createInterface({ input: leader.stdout! }), 'line')) as [string];
    const sleeperPid = Number(line);
    const pgid = leader.pid!;
    await waitFor(() => cmdline(pgid).includes('for (;;)'), 'the leader to run Node');
    await waitFor(() => cmdline(sleeperPid).includes('1000'), 'the sleeper to run');
    // Node's start-up allocates; a loop that allocates nothing then holds its memory still.
    await sleep(500);
    return { pgid, sleeperPid };
  }

  it('sums the memory of every process in the group, each read after the last ) of its stat', async () => {
    const { pgid, sleeperPid } = await busyGroup();
    expect(fs.readFileSync(`/proc/${sleeperPid}/stat`, 'utf8')).toContain('(we) ird (sleep)');
    const before = vmRss(pgid) + vmRss(sleeperPid);
    const usage = readGroupUsage(pgid);
    const after = vmRss(pgid) + vmRss(sleeperPid);
    expect(usage).not.toBeNull();
    const tolerance = 128 * 1024;
    // Leaving the sleeper out would show.
    expect(vmRss(sleeperPid)).toBeGreaterThan(4 * tolerance);
    expect(usage!.memoryBytes).toBeGreaterThanOrEqual(Math.min(before, after) - tolerance);
    expect(usage!.memoryBytes).toBeLessThanOrEqual(Math.max(before, after) + tolerance);
  });

  it('counts CPU time that grows while the group is busy', async () => {
    const { pgid } = await busyGroup();
    const first = readGroupUsage(pgid)!;
    await sleep(600);
    const second = readGroupUsage(pgid)!;
    // One busy core for 600 ms; even a crowded 2-core machine leaves it a good part of that.
    expect(second.cpuUsageNs - first.cpuUsageNs).toBeGreaterThan(60e6);
    expect(second.cpuUsageNs - first.cpuUsageNs).toBeLessThan(1_000e6);
  });

  it('keeps the CPU time of a child that a member of the group reaped', async () => {
    // The shell waits for (reaps) a Node child that spins for 400 ms of CPU time, then becomes `sleep`.
    const spin = 'const u = () => process.cpuUsage().user; while (u() < 400_000);';
    const leader = spawn('sh', ['-c', `"$1" -e '${spin}' && echo spun && exec sleep 1000`, 'sh', process.execPath], {
      detached: true,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    groups.push(leader);
    await once(createInterface({ input: leader.stdout! }), 'line');
    await waitFor(() => cmdline(leader.pid!).startsWith('sleep'), 'the shell to become sleep');
    // 400 ms of user time, less a clock tick of rounding; its start-up and system time come on top.
    expect(readGroupUsage(leader.pid!)!.cpuUsageNs).toBeGreaterThanOrEqual(390e6);
  });

  it('is null once no process of the group lives, and for a group that never was', async () => {
    const { pgid, sleeperPid } = await busyGroup();
    const leader = groups.at(-1)!;
    process.kill(-pgid, 'SIGKILL');
    await new Promise((resolve) => leader.once('exit', resolve));
    // The sleeper, now an orphan, is reaped by init (or left a zombie where nothing reaps): either way it runs no more.
    await waitFor(() => readGroupUsage(pgid) === null, 'the group to be gone');
    expect(cmdline(sleeperPid)).toBe('');
    expect(readGroupUsage(2 ** 31 - 2)).toBeNull();
  });

  it('serves reads in one synchronous run from one pass over /proc, and looks again on the next tick', async () => {
    const { pgid } = await busyGroup();
    const first = readGroupUsage(pgid)!;
    const busyUntil = Date.now() + 50;
    while (Date.now() < busyUntil);
    expect(readGroupUsage(pgid)).toEqual(first);
    await sleep(300);
    expect(readGroupUsage(pgid)!.cpuUsageNs).toBeGreaterThan(first.cpuUsageNs);
  });
});
