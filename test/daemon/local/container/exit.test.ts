/**
 * How a container's end reaches the service (container-exit.ts): the exit
 * file conmon writes in the bundle (out of the box's reach), for the service
 * that started it and for one that adopted it.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readCgroupStats } from '../../../../src/daemon/local/container/cgroup-stats.js';
import { exitOfStatus } from '../../../../src/daemon/local/container/container-exit.js';
import { openContainerStdin, watchAdoptedContainer } from '../../../../src/daemon/local/container/server-container.js';
import { readLog, sleep, startProbe, useSandbox, waitFor } from './helpers.js';

const sandbox = useSandbox();

describe('the end of a container', () => {
  it("reports the startup command's exit code", async () => {
    const probe = await startProbe(sandbox(), 'echo bye; exit 3');
    await expect(probe.exited).resolves.toEqual({ code: 3, signal: null });
    expect(readLog(probe)).toBe('bye\n');
    // conmon writes the exit file once it has reaped the first process: runc calls it stopped.
    await waitFor(async () => (await sandbox().runc.state(probe.id))?.status === 'stopped', 'runc to call it stopped', 2_000);
  });

  it('reports the signal a stop sent to every process (runc kill --all)', async () => {
    const probe = await startProbe(sandbox(), 'exec sleep 1000');
    await sleep(100);
    await sandbox().runc.kill(probe.id, 'SIGTERM', { all: true });
    await expect(probe.exited).resolves.toEqual({ code: null, signal: 'SIGTERM' });
  });

  it('reports SIGKILL for an out-of-memory kill, which the stats count', async () => {
    const probe = await startProbe(sandbox(), `exec perl -e '$x = "a" x (400 * 1024 * 1024)'`, {
      memoryMiB: 64,
      cpuPercent: 0,
      pids: 0,
    });
    await expect(probe.exited).resolves.toEqual({ code: null, signal: 'SIGKILL' });
    // The cgroup stays until `runc delete`: the service reads the OOM count before removing the container.
    expect(readCgroupStats(sandbox().hierarchy, probe.cgroupsPath)?.oomKills).toBeGreaterThanOrEqual(1);
  });

  it('reports SIGKILL when the init shell itself was killed and recorded nothing', async () => {
    const probe = await startProbe(sandbox(), 'exec sleep 1000');
    await sandbox().runc.kill(probe.id, 'SIGKILL');
    await expect(probe.exited).resolves.toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('is seen by a restarted service, whether the container ends later or ended already', async () => {
    const probe = await startProbe(sandbox(), 'while read line; do [ "$line" = quit ] && exit 7; echo "got $line"; done');
    // The "crash": the first service's handles go; conmon keeps the stdin pipe's own write end, so no EOF.
    probe.stdin.destroy();
    probe.exit.detach();
    const exited = watchAdoptedContainer(sandbox().runDir, probe.serverUuid).exited;
    let settled = false;
    void exited.then(() => (settled = true));
    await sleep(300);
    expect(settled).toBe(false);
    const writer = openContainerStdin(probe.pid);
    writer.write('one\nquit\n');
    await expect(exited).resolves.toEqual({ code: 7, signal: null });
    writer.destroy();
    expect(readLog(probe)).toBe('got one\n');
    // A third service, after the end: the exit file is read at once.
    await expect(watchAdoptedContainer(sandbox().runDir, probe.serverUuid).exited).resolves.toEqual({ code: 7, signal: null });
  });

  it('leaves no descriptor of a host file in the box: the first process and the startup command hold pipes only (docs/reference/containment.md)', async () => {
    const probe = await startProbe(sandbox(), 'for p in $$ 1; do ls -l /proc/$p/fd | sed -n "s/.* -> /$p /p"; done; exit 0');
    await probe.exited;
    const entries = readLog(probe).trim().split('\n');
    expect(entries.length).toBeGreaterThanOrEqual(6);
    // The startup command's shell and PID 1: 0, 1 and 2 each, all pipes (conmon's).
    for (const entry of entries) expect(entry).toMatch(/^\d+ pipe:\[\d+\]$/);
  });

  it('reads statuses as conmon records them: codes, signals, nothing recorded', () => {
    expect(exitOfStatus(0)).toEqual({ code: 0, signal: null });
    expect(exitOfStatus(130)).toEqual({ code: null, signal: 'SIGINT' });
    expect(exitOfStatus(137)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(exitOfStatus(255)).toEqual({ code: 255, signal: null });
    expect(exitOfStatus(null)).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('reads SIGKILL when conmon died without recording anything', async () => {
    const probe = await startProbe(sandbox(), 'exec sleep 1000');
    const conmonPid = Number(fs.readFileSync(probe.paths.conmonPidFile, 'utf8'));
    process.kill(conmonPid, 'SIGKILL');
    await expect(probe.exited).resolves.toEqual({ code: null, signal: 'SIGKILL' });
  });
});
