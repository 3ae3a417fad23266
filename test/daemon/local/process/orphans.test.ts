import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  crashedServiceLeaving,
  ECHO_STARTUP,
  HANDLES_TERM,
  IGNORES_TERM,
  isAlive,
  waitFor,
  useSupervisorSandbox,
} from './helpers.js';

/** The process supervisor reaping what a crashed service instance left behind, and only that. */
describe('ProcessSupervisor', () => {
  const sandbox = useSupervisorSandbox();
  const { supervisor, server, logOf, pidFileOf } = sandbox;

  it('reaps a server process left running by a service that crashed: SIGTERM first, and it may save', async () => {
    const target = server({ startup: HANDLES_TERM, stopCommand: null });
    const pid = await crashedServiceLeaving(target, { logDir: sandbox.logDir, runDir: sandbox.runDir }, sandbox.hosts);
    sandbox.strayPids.push(pid);
    await waitFor(() => logOf(target.uuid).includes('up'), 'the orphan to be up');
    expect(isAlive(pid)).toBe(true);
    expect(fs.existsSync(pidFileOf(target.uuid))).toBe(true);

    const { s: next, logger } = supervisor({ stopGraceMs: 2_000 });
    // Until it is reaped, the orphan is what runs on that volume.
    expect(next.state(target.uuid)).toBe('running');
    await next.reapOrphans();

    expect(isAlive(pid)).toBe(false);
    expect(logOf(target.uuid)).toContain('SIGTERM received\nsaved\n');
    expect(fs.existsSync(pidFileOf(target.uuid))).toBe(false);
    expect(logger.entries.some((e) => e.msg.includes('left behind') && e.obj.pid === pid)).toBe(true);
    // The new supervisor can start the server again.
    await next.start({ ...target, startup: ECHO_STARTUP });
    expect(next.state(target.uuid)).toBe('running');
  });

  it('SIGKILLs an orphan that ignores SIGTERM', async () => {
    const target = server({ startup: IGNORES_TERM, stopCommand: null });
    const pid = await crashedServiceLeaving(target, { logDir: sandbox.logDir, runDir: sandbox.runDir }, sandbox.hosts);
    sandbox.strayPids.push(pid);
    await waitFor(() => logOf(target.uuid).includes('stubborn'), 'the trap to be set');

    const { s: next } = supervisor({ stopGraceMs: 300 });
    const started = Date.now();
    await next.reapOrphans();
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(isAlive(pid)).toBe(false);
    expect(fs.existsSync(pidFileOf(target.uuid))).toBe(false);
  });

  it('leaves alone what another supervisor in this (live) process runs', async () => {
    const { s: other } = supervisor();
    const target = server();
    await other.start(target);
    await waitFor(() => logOf(target.uuid).includes('ready'), 'ready line');
    const pid = other.pid(target.uuid)!;
    const pidFile = fs.readFileSync(pidFileOf(target.uuid), 'utf8');

    const { s: next } = supervisor({ stopGraceMs: 300 });
    await next.reapOrphans();
    expect(isAlive(pid)).toBe(true);
    expect(fs.readFileSync(pidFileOf(target.uuid), 'utf8')).toBe(pidFile);
    expect(next.state(target.uuid)).toBe('running');
    expect(other.state(target.uuid)).toBe('running');
  });

  it.skipIf(!fs.existsSync('/proc/self/stat'))('leaves alone a process whose pid was recycled (other start time)', async () => {
    const stranger = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const pid = stranger.pid!;
    sandbox.strayPids.push(pid);
    const uuid = randomUUID();
    fs.mkdirSync(sandbox.runDir, { recursive: true });
    fs.writeFileSync(pidFileOf(uuid), JSON.stringify({ pid, pgid: pid, startTime: '1', command: 'x', startedAt: '' }));

    const { s } = supervisor({ stopGraceMs: 300 });
    await s.reapOrphans();
    expect(isAlive(pid)).toBe(true);
    expect(fs.existsSync(pidFileOf(uuid))).toBe(false);
  });

  it('removes stale and unreadable pid files, and copes without a run folder', async () => {
    const { s } = supervisor();
    await s.reapOrphans(); // no run folder yet
    fs.mkdirSync(sandbox.runDir, { recursive: true });
    const dead = spawn('true');
    await new Promise((resolve) => dead.once('exit', resolve));
    const stale = randomUUID();
    const garbled = randomUUID();
    fs.writeFileSync(
      pidFileOf(stale),
      JSON.stringify({ pid: dead.pid, pgid: dead.pid, startTime: null, command: 'true', startedAt: '' }),
    );
    fs.writeFileSync(pidFileOf(garbled), '{"pid": 1, "pgid": 1');
    fs.writeFileSync(path.join(sandbox.runDir, 'unrelated.txt'), 'kept');

    await s.reapOrphans();
    expect(fs.readdirSync(sandbox.runDir)).toEqual(['unrelated.txt']);
  });

  it('reaps a process recorded only in a pid file that a crash left before its rename', async () => {
    const orphan = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const pid = orphan.pid!;
    sandbox.strayPids.push(pid);
    const exited = new Promise((resolve) => orphan.once('exit', resolve));
    fs.mkdirSync(sandbox.runDir, { recursive: true });
    const file = `${pidFileOf(randomUUID())}.tmp`;
    fs.writeFileSync(file, JSON.stringify({ pid, pgid: pid, startTime: null, command: 'sleep 30', startedAt: '' }));

    const { s } = supervisor({ stopGraceMs: 300 });
    await s.reapOrphans();
    await exited;
    expect(fs.existsSync(file)).toBe(false);
  });

  it('never signals group 1 or 0, whatever a pid file says', async () => {
    fs.mkdirSync(sandbox.runDir, { recursive: true });
    const uuid = randomUUID();
    fs.writeFileSync(pidFileOf(uuid), JSON.stringify({ pid: 1, pgid: 1, startTime: null, command: 'x', startedAt: '' }));
    const { s } = supervisor();
    await s.reapOrphans();
    expect(fs.existsSync(pidFileOf(uuid))).toBe(false);
    expect(isAlive(process.pid)).toBe(true);
  });
});
