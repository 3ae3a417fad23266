/**
 * How a container's end reaches the service (container-exit.ts): the exit
 * FIFO's end-of-file and the status the init shell writes, for the service
 * that started it and for one that only re-attached.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readCgroupStats } from '../../../../src/daemon/local/container/cgroup-stats.js';
import { readExitStatus, watchContainerExit } from '../../../../src/daemon/local/container/container-exit.js';
import { openStdinWriter } from '../../../../src/daemon/local/container/stdin-fifo.js';
import { readLog, sleep, startProbe, useSandbox, waitFor } from './helpers.js';

const sandbox = useSandbox();

describe('the end of a container', () => {
  it("reports the startup command's exit code", async () => {
    const probe = await startProbe(sandbox(), 'echo bye; exit 3');
    await expect(probe.exited).resolves.toEqual({ code: 3, signal: null });
    expect(readLog(probe)).toBe('bye\n');
    // The FIFO closes as the first process exits, a moment before it is a zombie runc calls stopped.
    await waitFor(async () => (await sandbox().runc.state(probe.id))?.status === 'stopped', 'runc to call it stopped', 2_000);
  });

  it('reports the signal a stop sent to every process (runc kill --all)', async () => {
    const probe = await startProbe(sandbox(), 'exec sleep 1000');
    await sleep(100);
    await sandbox().runc.kill(probe.id, 'SIGTERM', { all: true });
    await expect(probe.exited).resolves.toEqual({ code: null, signal: 'SIGTERM' });
  });

  it('reports SIGKILL for an out-of-memory kill, which the stats count', async () => {
    const probe = await startProbe(sandbox(), `exec perl -e '$x = "a" x (400 * 1024 * 1024)'`, { memoryMiB: 64, cpuPercent: 0, pids: 0 });
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
    // The "crash": the first service's handles go.
    probe.stdin.destroy();
    fs.closeSync(probe.logFd);
    const exited = watchContainerExit(probe.paths);
    let settled = false;
    void exited.then(() => (settled = true));
    await sleep(300);
    expect(settled).toBe(false);
    const writer = await openStdinWriter(probe.paths.stdinFifo);
    writer.write('one\nquit\n');
    await expect(exited).resolves.toEqual({ code: 7, signal: null });
    writer.destroy();
    expect(readLog(probe)).toBe('got one\n');
    // A third service, after the end: the FIFO has no writer left, so the read ends at once.
    await expect(watchContainerExit(probe.paths)).resolves.toEqual({ code: 7, signal: null });
  });

  it('gives the startup command none of the descriptors the init shell holds', async () => {
    const probe = await startProbe(sandbox(), 'ls /proc/self/fd | tr "\\n" " "; echo; exit 0');
    await probe.exited;
    // 0-2, and the descriptor ls opens to read the folder.
    expect(readLog(probe).trim()).toBe('0 1 2 3');
  });

  it('reads shell statuses: codes, signals, nothing recorded', () => {
    const dir = fs.mkdtempSync('/tmp/quetzal-exit-');
    try {
      const file = `${dir}/status`;
      const status = (text: string) => {
        fs.writeFileSync(file, text);
        return readExitStatus(file);
      };
      expect(status('0\n')).toEqual({ code: 0, signal: null });
      expect(status('130\n')).toEqual({ code: null, signal: 'SIGINT' });
      expect(status('137\n')).toEqual({ code: null, signal: 'SIGKILL' });
      expect(status('255\n')).toEqual({ code: 255, signal: null });
      expect(status('')).toEqual({ code: null, signal: 'SIGKILL' });
      expect(readExitStatus(`${dir}/missing`)).toEqual({ code: null, signal: 'SIGKILL' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
