/**
 * A server's process in its container (docs/reference/containment.md), with real runc: what it can
 * see and write, who it runs as, its console both ways, that nothing it
 * starts outlives the container, and that the container outlives the
 * service's handles and can be found, re-attached or removed again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Runc } from '../../../../src/daemon/local/container/runc.js';
import { findConmon, MonitorError } from '../../../../src/daemon/local/container/conmon.js';
import type { ContainerOptions } from '../../../../src/daemon/local/container/container-spec.js';
import { inspectHostLayout } from '../../../../src/daemon/local/container/host-layout.js';
import {
  ContainerExistsError,
  openContainerStdin,
  removeServerContainer,
  startServerContainer,
} from '../../../../src/daemon/local/container/server-container.js';
import { readLog, SERVER_UID, sleep, startProbe, useSandbox, waitFor } from './helpers.js';

const sandbox = useSandbox();

function options(serverUuid: string, volumeDir: string): ContainerOptions {
  return {
    serverUuid,
    startup: 'exec sleep 1000',
    volumeDir,
    uid: SERVER_UID,
    gid: SERVER_UID,
    limits: { memoryMiB: 0, cpuPercent: 0, pids: 0 },
    cgroupsPath: `/quetzal/test-${serverUuid}`,
    hiddenPaths: [sandbox().dataDir],
    host: inspectHostLayout(sandbox().hierarchy),
  };
}

describe('a confined server process', () => {
  it('runs as the server uid, sees only its volume, and cannot write outside it', async () => {
    const { dataDir } = sandbox();
    const probe = await startProbe(
      sandbox(),
      [
        'echo "uid=$(id -u) gid=$(id -g) pwd=$(pwd) home=$HOME"',
        `cat ${dataDir}/quetzal.sqlite 2>/dev/null && echo "LEAK database"`,
        `cat ${dataDir}/initial-api-key 2>/dev/null && echo "LEAK key"`,
        `ls ${dataDir}/volumes 2>/dev/null && echo "LEAK volumes"`,
        'cat /etc/shadow 2>/dev/null && echo "LEAK shadow"',
        'for f in /usr/x /etc/x /x /home/x /proc/sys/kernel/hostname; do (echo x > $f) 2>/dev/null && echo "WROTE $f"; done',
        'echo "processes=$(ls /proc | grep -c "^[0-9]")"',
        'echo "root=$(ls / | tr "\\n" " ")"',
        'grep -E "^(NoNewPrivs|CapEff|CapBnd):" /proc/self/status',
        'echo "core=$(ulimit -c) nofile=$(ulimit -n) host=$(cat /proc/sys/kernel/hostname)"',
        'grep " /tmp " /proc/mounts',
        'echo inside > inside.txt && mkdir made && echo "done"',
      ].join('; '),
    );
    await waitFor(() => readLog(probe).includes('done'), 'the probe to finish');
    const log = readLog(probe);
    expect(log).toContain(`uid=${SERVER_UID} gid=${SERVER_UID} pwd=/home/container home=/home/container`);
    expect(log).not.toMatch(/LEAK|WROTE/);
    expect(log).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(log).toMatch(/^CapEff:\s+0{16}$/m);
    expect(log).toMatch(/^CapBnd:\s+0{16}$/m);
    const nofile = Math.min(65_536, inspectHostLayout().nofileHardLimit);
    expect(log).toContain(`core=0 nofile=${nofile} host=${probe.serverUuid}`);
    expect(log).toMatch(/^tmpfs \/tmp tmpfs rw,nosuid,nodev,.*size=102400k/m);
    // The init shell, the startup shell, its $( ) subshell, ls and grep: nothing of the host's processes.
    expect(Number(/processes=(\d+)/.exec(log)?.[1])).toBeLessThanOrEqual(5);
    expect(log).toMatch(/root=bin dev etc home lib lib64 proc sbin sys tmp usr\s*$/m);
    const written = fs.statSync(path.join(probe.volumeDir, 'inside.txt'));
    expect([written.uid, written.gid]).toEqual([SERVER_UID, SERVER_UID]);
    expect(fs.readFileSync(path.join(probe.volumeDir, 'inside.txt'), 'utf8')).toBe('inside\n');
    expect(fs.statSync(path.join(probe.volumeDir, 'made')).uid).toBe(SERVER_UID);
  });

  it('hides a DATA_DIR that lies inside a folder it sees (/etc)', async () => {
    const hidden = fs.mkdtempSync('/etc/quetzal-test-');
    try {
      fs.writeFileSync(path.join(hidden, 'secret'), 'SECRET', { mode: 0o644 });
      const probe = await startProbe(sandbox(), `cat ${hidden}/secret; ls -A ${hidden}; echo "listed"`, undefined, [hidden]);
      await waitFor(() => readLog(probe).includes('listed'), 'the probe to finish');
      expect(readLog(probe)).not.toContain('SECRET');
      expect(readLog(probe)).toMatch(/No such file/);
    } finally {
      fs.rmSync(hidden, { recursive: true, force: true });
    }
  });

  it("reads console input from conmon's stdin pipe and its output reaches the log through conmon", async () => {
    const probe = await startProbe(sandbox(), 'echo ready; while read line; do echo "got $line"; done');
    // startServerContainer resolves after `runc start` has exited: all that follows is runc-less.
    await waitFor(() => readLog(probe).includes('ready'), 'the first line');
    probe.stdin.write('say hello\n');
    await waitFor(() => readLog(probe).includes('got say hello'), 'the console line to come back');
    // Another instance's way in (console.ts, writeToConsole): the first process's stdin through /proc.
    fs.appendFileSync(`/proc/${probe.pid}/fd/0`, 'via proc\n');
    await waitFor(() => readLog(probe).includes('got via proc'), 'the line written through /proc');
    expect((await sandbox().runc.state(probe.id))?.status).toBe('running');
  });

  it('leaves nothing running after kill and delete, setsid escapes included', async () => {
    const probe = await startProbe(
      sandbox(),
      "setsid sh -c 'while :; do date >> escaped.txt; sleep 0.2; done' & exec sleep 1000",
    );
    const escaped = path.join(probe.volumeDir, 'escaped.txt');
    await waitFor(() => fs.existsSync(escaped) && fs.statSync(escaped).size > 60, 'the escapee to write');
    await sandbox().runc.kill(probe.id, 'SIGKILL', { all: true });
    await sandbox().runc.delete(probe.id, { force: true });
    expect(await sandbox().runc.state(probe.id)).toBeNull();
    const size = fs.statSync(escaped).size;
    await sleep(700);
    expect(fs.statSync(escaped).size).toBe(size);
  });

  it('ends every process in it when its first process dies', async () => {
    const probe = await startProbe(
      sandbox(),
      "setsid sh -c 'while :; do date >> escaped.txt; sleep 0.2; done' & exec sleep 1000",
    );
    const escaped = path.join(probe.volumeDir, 'escaped.txt');
    await waitFor(() => fs.existsSync(escaped), 'the escapee to write');
    // Only the first process: the PID namespace's end takes the rest with it.
    await sandbox().runc.kill(probe.id, 'SIGKILL');
    await waitFor(async () => (await sandbox().runc.state(probe.id))?.status === 'stopped', 'the container to stop');
    const size = fs.statSync(escaped).size;
    await sleep(700);
    expect(fs.statSync(escaped).size).toBe(size);
  });

  it('outlives the handles of a crashed service and can be adopted, then removed', async () => {
    const { runDir, runc } = sandbox();
    const probe = await startProbe(sandbox(), 'echo ready; while read line; do echo "got $line"; done; echo "EOF seen"');
    await waitFor(() => readLog(probe).includes('ready'), 'the first line');
    // The "crash": every handle the service had goes, as a SIGKILL would close them.
    probe.stdin.destroy();
    probe.exit.detach();
    await sleep(300);
    // A new service: a fresh runc wrapper over the same state directory, the stdin pipe through /proc.
    const next = new Runc(runc.binary, runc.stateRoot);
    const listed = await next.list();
    expect(listed.map((container) => [container.id, container.status])).toEqual([[probe.id, 'running']]);
    expect(readLog(probe)).not.toContain('EOF seen');
    const writer = openContainerStdin(probe.pid);
    writer.write('after restart\n');
    await waitFor(() => readLog(probe).includes('got after restart'), 'the adopted console');
    writer.destroy();
    await removeServerContainer(next, runDir, probe.serverUuid);
    expect(await next.state(probe.id)).toBeNull();
    expect(fs.existsSync(probe.paths.dir)).toBe(false);
    expect(() => openContainerStdin(probe.pid)).toThrow();
  });

  it('refuses a second container for the same server', async () => {
    const probe = await startProbe(sandbox(), 'exec sleep 1000');
    await expect(
      startServerContainer(sandbox().runc, sandbox().runDir, options(probe.serverUuid, probe.volumeDir), capture(probe.logFile)),
    ).rejects.toThrow(ContainerExistsError);
    expect((await sandbox().runc.state(probe.id))?.status).toBe('running');
  });

  it("reports runc's reason for a failed start and leaves no container behind", async () => {
    const { runc, runDir, dataDir } = sandbox();
    const missing = path.join(dataDir, 'volumes', 'missing');
    const failure = startServerContainer(
      runc,
      runDir,
      options('never-started', missing),
      capture(path.join(dataDir, 'console.log')),
    );
    await expect(failure).rejects.toThrow(MonitorError);
    await expect(failure).rejects.toThrow(new RegExp(`runc could not create quetzal-never-started: .*${missing}`));
    expect(await runc.list()).toEqual([]);
  });
});

function capture(logPath: string) {
  return { conmon: findConmon()!, logPath, logSizeMax: 1024 * 1024 };
}
