import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ServerNotRunningError } from '../../../../src/daemon/local/process/supervisor.js';
import {
  HANDLES_TERM,
  HAS_PROCFS,
  IGNORES_TERM,
  isAlive,
  processesOf,
  startTimeOf,
  waitFor,
  useSupervisorSandbox,
} from './helpers.js';

/** Several service instances (supervisors in other Node processes) sharing one run folder. */
describe('ProcessSupervisor', () => {
  const sandbox = useSupervisorSandbox();
  const { supervisor, host, server, logOf, pidFileOf } = sandbox;

  describe.skipIf(!HAS_PROCFS)('several instances sharing one run folder', () => {
    it('leaves alone, sees and drives a server another live instance runs: reap, state, start, console, stop', async () => {
      const target = server();
      const a = await host(target);
      const pid = a.serverPid;
      await waitFor(() => logOf(target.uuid).includes('ready'), 'ready line');
      const pidFile = fs.readFileSync(pidFileOf(target.uuid), 'utf8');
      expect(JSON.parse(pidFile)).toMatchObject({ pid, owner: { pid: a.pid, startTime: startTimeOf(a.pid) } });

      const { s: b, states, logger } = supervisor();
      await b.reapOrphans();
      expect(isAlive(pid)).toBe(true);
      expect(fs.readFileSync(pidFileOf(target.uuid), 'utf8')).toBe(pidFile);
      expect(b.state(target.uuid)).toBe('running');
      expect(b.pid(target.uuid)).toBe(pid);

      // Not a second copy on the same volume.
      await b.start(target);
      expect(fs.readFileSync(pidFileOf(target.uuid), 'utf8')).toBe(pidFile);
      expect(processesOf(target.uuid, 'leaders')).toEqual([pid]);
      expect(b.pid(target.uuid)).toBe(pid);

      // Console lines reach it through its standard input; its owner's own lines still do too.
      await b.sendCommand(target.uuid, 'hello from B');
      await waitFor(() => logOf(target.uuid).includes('> hello from B'), "the echo of B's line");
      expect(processesOf(target.uuid, 'node')).toHaveLength(1);
      expect(logOf(target.uuid).match(/ready/g)).toHaveLength(1);
      expect(await a.state()).toBe('running');

      await b.stop(target);
      expect(logOf(target.uuid)).toMatch(/> hello from B\nstopping\n$/); // the stop command, through the console
      expect(isAlive(pid)).toBe(false);
      expect(b.state(target.uuid)).toBe('offline');
      expect(states).toEqual(['stopping', 'offline']);
      await waitFor(() => a.events.includes('offline'), 'the owner to see it exit');
      expect(a.events).toEqual(['starting', 'running', 'offline']);
      expect(await a.state()).toBe('offline');
      await waitFor(() => !fs.existsSync(pidFileOf(target.uuid)), 'the owner to remove its pid file');
      expect(logger.entries.filter((e) => e.level !== 'info')).toEqual([]);
      await expect(b.sendCommand(target.uuid, 'late')).rejects.toBeInstanceOf(ServerNotRunningError);
    });

    it('restarts a server another instance runs: SIGTERM there (it may save), then it runs here, as both see', async () => {
      const target = server({ stopCommand: null });
      const a = await host(target);
      await waitFor(() => logOf(target.uuid).includes('ready'), 'ready line');
      const { s: b } = supervisor();

      await b.restart(target);
      const pid = b.pid(target.uuid)!;
      sandbox.strayPids.push(pid);
      expect(pid).not.toBe(a.serverPid);
      expect(isAlive(a.serverPid)).toBe(false);
      // Its shell died of the SIGTERM at once, yet its owner let the server save instead of killing it.
      expect(logOf(target.uuid)).toMatch(/^ready\nSIGTERM received\nsaved\n/);
      expect(a.events).toEqual(['starting', 'running', 'stopping', 'offline']);
      expect(b.state(target.uuid)).toBe('running');
      expect(JSON.parse(fs.readFileSync(pidFileOf(target.uuid), 'utf8'))).toMatchObject({ pid, owner: { pid: process.pid } });
      expect(await a.state()).toBe('running');
      await waitFor(() => logOf(target.uuid).match(/ready/g)?.length === 2, 'the second ready');
    });

    it('kills a server another instance runs, even one that ignores SIGTERM', async () => {
      const target = server({ startup: IGNORES_TERM, stopCommand: null });
      const a = await host(target);
      await waitFor(() => logOf(target.uuid).includes('stubborn'), 'the trap to be set');
      const { s: b, states } = supervisor({ stopGraceMs: 20_000 });

      const started = Date.now();
      await b.kill(target);
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(isAlive(a.serverPid)).toBe(false);
      expect(b.state(target.uuid)).toBe('offline');
      expect(states).toEqual(['stopping', 'offline']);
      await waitFor(() => a.events.includes('offline'), 'the owner to see it exit');
    });

    it('kills a server another instance runs once it ignored its stop command for the grace period', async () => {
      const target = server({ startup: HANDLES_TERM, stopCommand: 'quit' }); // it never reads its console
      const a = await host(target);
      await waitFor(() => logOf(target.uuid).includes('up'), 'the server to be up');
      const { s: b, logger } = supervisor({ stopGraceMs: 300 });

      const started = Date.now();
      await b.stop(target);
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      expect(isAlive(a.serverPid)).toBe(false);
      expect(logOf(target.uuid)).not.toContain('SIGTERM received');
      expect(logger.entries.some((e) => e.level === 'warn' && e.msg.includes('did not stop in time'))).toBe(true);
    });

    it('reaps the server once the instance that ran it has died, and only then', async () => {
      const target = server({ startup: HANDLES_TERM, stopCommand: null });
      const a = await host(target);
      await waitFor(() => logOf(target.uuid).includes('up'), 'the server to be up');
      const { s: b, logger } = supervisor({ stopGraceMs: 2_000 });
      await b.reapOrphans();
      expect(isAlive(a.serverPid)).toBe(true);

      await a.crash();
      expect(isAlive(a.serverPid)).toBe(true);
      // An orphan still runs on that volume: visible, and not started twice.
      expect(b.state(target.uuid)).toBe('running');
      await b.start(target);
      expect(processesOf(target.uuid, 'leaders')).toEqual([a.serverPid]);

      await b.reapOrphans();
      expect(isAlive(a.serverPid)).toBe(false);
      expect(logOf(target.uuid)).toContain('SIGTERM received\nsaved\n');
      expect(fs.existsSync(pidFileOf(target.uuid))).toBe(false);
      expect(logger.entries.some((e) => e.msg.includes('left behind') && e.obj.ownerPid === a.pid)).toBe(true);
      expect(b.state(target.uuid)).toBe('offline');
    });

    it('spawns one process when two supervisors start the same server at once', async () => {
      const { s: b } = supervisor();
      const { s: c } = supervisor();
      const target = server();
      await Promise.all([b.start(target), c.start(target), b.start(target), c.start(target)]);
      const owners = [b, c].filter((s) => s.pid(target.uuid) !== undefined && s.state(target.uuid) === 'running');
      expect(owners).toHaveLength(2); // one runs it, the other sees it
      const pid = b.pid(target.uuid)!;
      expect(c.pid(target.uuid)).toBe(pid);
      expect(processesOf(target.uuid, 'leaders')).toEqual([pid]);
      await c.sendCommand(target.uuid, 'marker');
      await waitFor(() => logOf(target.uuid).includes('> marker'), 'the marker echo');
      expect(logOf(target.uuid).match(/ready/g)).toHaveLength(1);
    });

    it('sees a claim as starting while its owner lives, and replaces it once the owner is dead', async () => {
      fs.mkdirSync(sandbox.runDir, { recursive: true });
      const target = server();
      const claim = (ownerPid: number) =>
        JSON.stringify({
          pid: null,
          pgid: null,
          startTime: null,
          command: 'x',
          startedAt: '',
          owner: { pid: ownerPid, startTime: null, bootId: null },
          token: 'ab',
        });
      fs.writeFileSync(pidFileOf(target.uuid), claim(process.pid));
      const { s } = supervisor();
      expect(s.state(target.uuid)).toBe('starting');
      await s.start(target); // someone else is starting it
      expect(s.pid(target.uuid)).toBeUndefined();
      await s.reapOrphans();
      expect(fs.readFileSync(pidFileOf(target.uuid), 'utf8')).toBe(claim(process.pid));

      const dead = spawn('true');
      await new Promise((resolve) => dead.once('exit', resolve));
      fs.writeFileSync(pidFileOf(target.uuid), claim(dead.pid!));
      expect(s.state(target.uuid)).toBe('offline');
      await s.start(target);
      expect(s.state(target.uuid)).toBe('running');
      expect(JSON.parse(fs.readFileSync(pidFileOf(target.uuid), 'utf8'))).toMatchObject({
        pid: s.pid(target.uuid),
        owner: { pid: process.pid },
      });
    });

    it('refuses console lines for a foreign process whose standard input is not a pipe', async () => {
      const stranger = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
      const pid = stranger.pid!;
      sandbox.strayPids.push(pid);
      const exited = new Promise((resolve) => stranger.once('exit', resolve));
      fs.mkdirSync(sandbox.runDir, { recursive: true });
      const target = server();
      const record = {
        pid,
        pgid: pid,
        startTime: startTimeOf(pid),
        command: 'sleep 30',
        startedAt: '',
        owner: { pid: process.pid, startTime: null, bootId: null },
        token: 'cd',
      };
      fs.writeFileSync(pidFileOf(target.uuid), JSON.stringify(record));

      const { s, logger } = supervisor({ stopGraceMs: 300 });
      expect(s.state(target.uuid)).toBe('running');
      await expect(s.sendCommand(target.uuid, 'hello')).rejects.toBeInstanceOf(ServerNotRunningError);
      expect(logger.entries.some((e) => e.obj.err instanceof Error && /not a pipe/.test(e.obj.err.message))).toBe(true);
      // Its stop command cannot be delivered: SIGTERM instead, and sleep obeys.
      await s.stop(target);
      await exited;
      expect(s.state(target.uuid)).toBe('offline');
    });
  });
});
