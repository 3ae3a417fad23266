import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ServerState } from '../../../../src/daemon/daemon.js';
import { NoStartupCommandError, ServerNotRunningError } from '../../../../src/daemon/local/process/supervisor.js';
import { ECHO_STARTUP, HAS_PROCFS, IGNORES_TERM, isAlive, startTimeOf, waitFor, useSupervisorSandbox } from './helpers.js';

/** The process supervisor running its own servers, against real child processes. */
describe('ProcessSupervisor', () => {
  const sandbox = useSupervisorSandbox();
  const { supervisor, server, logOf, pidFileOf, exitOf } = sandbox;

  it('starts a process in the volume folder: starting, then running; its output goes to the log; a pid file records it', async () => {
    const { s, states } = supervisor();
    const target = server({ startup: `pwd; ${ECHO_STARTUP}` });
    await s.start(target);

    expect(s.state(target.uuid)).toBe('running');
    expect(states).toEqual(['starting', 'running']);
    await waitFor(() => logOf(target.uuid).includes('ready'), 'ready line');
    expect(logOf(target.uuid)).toContain(fs.realpathSync(sandbox.volumeDir));
    const pid = s.pid(target.uuid)!;
    expect(isAlive(pid)).toBe(true);
    const record = JSON.parse(fs.readFileSync(pidFileOf(target.uuid), 'utf8')) as {
      pid: number;
      pgid: number;
      startTime: string | null;
      owner: { pid: number; startTime: string | null; bootId: string | null };
    };
    expect(record).toMatchObject({ pid, pgid: pid, owner: { pid: process.pid } });
    if (HAS_PROCFS) {
      expect(record.startTime).toMatch(/^\d+$/);
      expect(record.owner.startTime).toBe(startTimeOf(process.pid));
      expect(record.owner.bootId).toBe(fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
    }
  });

  it('appends to the log across runs instead of truncating it', async () => {
    const { s } = supervisor();
    const target = server();
    await s.start(target);
    await waitFor(() => logOf(target.uuid).includes('ready'), 'first ready');
    await s.restart(target);
    await waitFor(() => logOf(target.uuid).match(/ready/g)?.length === 2, 'second ready');
    expect(logOf(target.uuid)).toMatch(/^ready\nstopping\nready\n$/);
  });

  it('writes console lines to standard input; the echo shows up in the log', async () => {
    const { s } = supervisor();
    const target = server();
    await s.start(target);
    await s.sendCommand(target.uuid, 'say hello');
    await s.sendCommand(target.uuid, 'say again');
    await waitFor(() => logOf(target.uuid).includes('> say again'), 'echo of the second line');
    expect(logOf(target.uuid)).toBe('ready\n> say hello\n> say again\n');
  });

  it('stops with the stop command: stopping, then offline once it exited by itself; the pid file is removed', async () => {
    const { s, states, logger } = supervisor();
    const target = server();
    await s.start(target);
    const pid = s.pid(target.uuid)!;
    const stopping = s.stop(target);
    await waitFor(() => s.state(target.uuid) === 'stopping', 'stopping');
    await stopping;

    expect(s.state(target.uuid)).toBe('offline');
    expect(states).toEqual(['starting', 'running', 'stopping', 'offline']);
    expect(logOf(target.uuid)).toContain('stopping\n');
    expect(exitOf(logger, pid)).toMatchObject({ code: 0, signal: null });
    expect(isAlive(pid)).toBe(false);
    expect(fs.existsSync(pidFileOf(target.uuid))).toBe(false);
    expect(logger.entries.some((e) => e.level === 'warn')).toBe(false);
  });

  it('stops with SIGTERM to the process group when there is no stop command, waiting for the server to finish, not just the shell', async () => {
    const { s, logger } = supervisor();
    const target = server({ stopCommand: null });
    await s.start(target);
    await waitFor(() => logOf(target.uuid).includes('ready'), 'ready line');
    const started = Date.now();
    await s.stop(target);

    expect(s.state(target.uuid)).toBe('offline');
    // /bin/sh dies of the SIGTERM at once; the server itself still saves before it exits.
    expect(logOf(target.uuid)).toContain('SIGTERM received\nsaved\n');
    expect(Date.now() - started).toBeLessThan(5_000); // not the 10 s grace period
    expect(logger.entries.some((e) => e.msg.includes('did not stop in time'))).toBe(false);
  });

  it("treats Pterodactyl's ^C stop command as SIGINT", async () => {
    const { s } = supervisor();
    const target = server({ stopCommand: '^C' });
    await s.start(target);
    await waitFor(() => logOf(target.uuid).includes('ready'), 'ready line');
    await s.stop(target);
    expect(logOf(target.uuid)).toContain('SIGINT received');
  });

  it('SIGKILLs the whole group when the process ignores its stop request for the grace period', async () => {
    const { s, logger } = supervisor({ stopGraceMs: 300 });
    const target = server({ startup: IGNORES_TERM, stopCommand: null });
    await s.start(target);
    await waitFor(() => logOf(target.uuid).includes('stubborn'), 'the trap to be set');
    const pid = s.pid(target.uuid)!;
    const started = Date.now();
    await s.stop(target);

    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(s.state(target.uuid)).toBe('offline');
    expect(exitOf(logger, pid)).toMatchObject({ signal: 'SIGKILL' });
    expect(logger.entries.some((e) => e.level === 'warn' && e.msg.includes('did not stop in time'))).toBe(true);
  });

  it('also SIGKILLs a process that ignores its stop command', async () => {
    const { s, logger } = supervisor({ stopGraceMs: 300 });
    const target = server({ startup: IGNORES_TERM, stopCommand: 'quit' });
    await s.start(target);
    const pid = s.pid(target.uuid)!;
    await s.stop(target);
    expect(exitOf(logger, pid)).toMatchObject({ signal: 'SIGKILL' });
  });

  it('kills at once, and a kill does not wait behind a hanging stop', async () => {
    const { s, states, logger } = supervisor({ stopGraceMs: 20_000 });
    const target = server({ startup: IGNORES_TERM, stopCommand: null });
    await s.start(target);
    await waitFor(() => logOf(target.uuid).includes('stubborn'), 'the trap to be set');
    const pid = s.pid(target.uuid)!;
    const stopping = s.stop(target);
    await waitFor(() => s.state(target.uuid) === 'stopping', 'stopping');

    const started = Date.now();
    await s.kill(target);
    await stopping;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(s.state(target.uuid)).toBe('offline');
    expect(states).toEqual(['starting', 'running', 'stopping', 'offline']);
    expect(exitOf(logger, pid)).toMatchObject({ signal: 'SIGKILL' });
  });

  it('kills a running process: offline, exited by SIGKILL', async () => {
    const { s, logger } = supervisor();
    const target = server();
    await s.start(target);
    const pid = s.pid(target.uuid)!;
    await s.kill(target);
    expect(s.state(target.uuid)).toBe('offline');
    expect(exitOf(logger, pid)).toMatchObject({ signal: 'SIGKILL' });
    expect(isAlive(pid)).toBe(false);
  });

  it('kills what the startup command forked along with it', async () => {
    const { s } = supervisor();
    // The shell backgrounds a sleeper and prints its pid, then runs the echo server.
    const target = server({ startup: `sleep 60 & echo "child $!"; ${ECHO_STARTUP}` });
    await s.start(target);
    await waitFor(() => /child \d+/.test(logOf(target.uuid)), 'the child pid');
    const childPid = Number(/child (\d+)/.exec(logOf(target.uuid))![1]);
    expect(isAlive(childPid)).toBe(true);
    await s.kill(target);
    await waitFor(() => !isAlive(childPid), 'the forked child to die');
  });

  it('restarts: the old process stops, a new one runs', async () => {
    const { s, states } = supervisor();
    const target = server();
    await s.start(target);
    const first = s.pid(target.uuid)!;
    await s.restart(target);
    const second = s.pid(target.uuid)!;

    expect(second).not.toBe(first);
    expect(isAlive(first)).toBe(false);
    expect(s.state(target.uuid)).toBe('running');
    expect(states).toEqual(['starting', 'running', 'stopping', 'offline', 'starting', 'running']);
    expect(JSON.parse(fs.readFileSync(pidFileOf(target.uuid), 'utf8'))).toMatchObject({ pid: second });
  });

  it('restarts an offline server by starting it', async () => {
    const { s } = supervisor();
    const target = server();
    await s.restart(target);
    expect(s.state(target.uuid)).toBe('running');
  });

  it('notices a process that exits by itself: offline, listeners told, pid file removed', async () => {
    const { s, logger } = supervisor();
    const seen: Array<[string, ServerState]> = [];
    s.onStateChange((uuid, state) => seen.push([uuid, state]));
    const target = server({ startup: 'echo bye; exit 3' });
    await s.start(target);
    // It may be gone already; the supervisor logged its pid when it started.
    const pid = logger.entries.find((e) => e.msg === 'server process started' && e.obj.serverUuid === target.uuid)?.obj.pid;
    await waitFor(() => s.state(target.uuid) === 'offline', 'the process to exit');

    expect(seen).toEqual([
      [target.uuid, 'starting'],
      [target.uuid, 'running'],
      [target.uuid, 'offline'],
    ]);
    expect(logOf(target.uuid)).toBe('bye\n');
    expect(exitOf(logger, pid as number)).toMatchObject({ code: 3, signal: null });
    await waitFor(() => !fs.existsSync(pidFileOf(target.uuid)), 'the pid file to go');
    // Startable again.
    await s.start({ ...target, startup: ECHO_STARTUP });
    expect(s.state(target.uuid)).toBe('running');
  });

  it('refuses console lines when the server is not running', async () => {
    const { s } = supervisor();
    const target = server();
    await expect(s.sendCommand(target.uuid, 'hello')).rejects.toBeInstanceOf(ServerNotRunningError);
    await s.start(target);
    await s.stop(target);
    await expect(s.sendCommand(target.uuid, 'hello')).rejects.toBeInstanceOf(ServerNotRunningError);
  });

  it('refuses to start a server without a startup command, staying offline', async () => {
    const { s, states } = supervisor();
    const target = server({ startup: null });
    await expect(s.start(target)).rejects.toBeInstanceOf(NoStartupCommandError);
    await expect(s.restart(target)).rejects.toBeInstanceOf(NoStartupCommandError);
    expect(s.state(target.uuid)).toBe('offline');
    expect(states).toEqual([]);
  });

  it('fails a start with a clear message when the volume folder is missing, staying offline', async () => {
    const { s, states } = supervisor();
    const target = server({ volumeDir: path.join(sandbox.dir, 'no-such-volume') });
    await expect(s.start(target)).rejects.toThrow(/volume folder .*no-such-volume does not exist/);
    expect(s.state(target.uuid)).toBe('offline');
    expect(states).toEqual([]);
  });

  it('makes stop and kill of an offline server no-ops, and start of a running one', async () => {
    const { s, states } = supervisor();
    const target = server();
    await s.stop(target);
    await s.kill(target);
    expect(states).toEqual([]);
    await s.start(target);
    const pid = s.pid(target.uuid);
    await s.start(target);
    expect(s.pid(target.uuid)).toBe(pid);
    expect(states).toEqual(['starting', 'running']);
  });

  it('serialises concurrent power actions: three starts spawn one process', async () => {
    const { s, states } = supervisor();
    const target = server();
    await Promise.all([s.start(target), s.start(target), s.start(target)]);
    expect(states).toEqual(['starting', 'running']);
    await s.sendCommand(target.uuid, 'marker');
    await waitFor(() => logOf(target.uuid).includes('> marker'), 'marker echo');
    expect(logOf(target.uuid).match(/ready/g)).toHaveLength(1);
  });

  it('serialises start, stop, start in the order asked', async () => {
    const { s, states } = supervisor();
    const target = server();
    await Promise.all([s.start(target), s.stop(target), s.start(target)]);
    expect(states).toEqual(['starting', 'running', 'stopping', 'offline', 'starting', 'running']);
    expect(s.state(target.uuid)).toBe('running');
  });

  it('keeps going when a listener throws, and stops telling an unsubscribed one', async () => {
    const { s, logger } = supervisor();
    const unsubscribe = s.onStateChange(() => {
      throw new Error('listener bug');
    });
    const late: ServerState[] = [];
    const stopListening = s.onStateChange((_uuid, state) => late.push(state));
    const target = server();
    await s.start(target);
    stopListening();
    await s.stop(target);
    unsubscribe();

    expect(s.state(target.uuid)).toBe('offline');
    expect(late).toEqual(['starting', 'running']);
    expect(logger.entries.filter((e) => e.msg === 'a server state listener failed')).toHaveLength(4);
  });

  it('shuts everything down: each process by its own stop procedure, in parallel', async () => {
    const { s, logger } = supervisor({ stopGraceMs: 400 });
    const graceful = server();
    const terminated = server({ stopCommand: null });
    const stubborn = server({ startup: IGNORES_TERM, stopCommand: null });
    await Promise.all([s.start(graceful), s.start(terminated), s.start(stubborn)]);
    await waitFor(() => logOf(stubborn.uuid).includes('stubborn') && logOf(terminated.uuid).includes('ready'), 'all up');
    const pids = [graceful, terminated, stubborn].map((t) => s.pid(t.uuid)!);
    const started = Date.now();
    await s.shutdownAll();

    expect(Date.now() - started).toBeLessThan(3_000); // in parallel: about one grace period
    for (const t of [graceful, terminated, stubborn]) expect(s.state(t.uuid)).toBe('offline');
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
    expect(logOf(graceful.uuid)).toContain('stopping');
    expect(logOf(terminated.uuid)).toContain('SIGTERM received');
    expect(exitOf(logger, pids[2]!)).toMatchObject({ signal: 'SIGKILL' });
    expect(fs.readdirSync(sandbox.runDir)).toEqual([]);
    await expect(s.start(graceful)).rejects.toThrow(/shutting down/);
  });

  it('shutdownAll waits for a start in flight and stops that process too', async () => {
    const { s } = supervisor();
    const target = server();
    const starting = s.start(target);
    await s.shutdownAll();
    await starting;
    expect(s.state(target.uuid)).toBe('offline');
  });
});
