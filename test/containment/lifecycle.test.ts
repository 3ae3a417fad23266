/**
 * A confined server's end (docs/reference/containment.md, issue 11) through a real service: stop
 * and kill end every process it started, one that left with `setsid`
 * included; a service SIGKILLed while a container runs leaves it running
 * with its monitor, and the next service on the same DATA_DIR adopts it
 * (docs/reference/power-and-console.md#servers-outlive-the-service): its console, commands, figures and stop work, and a start never
 * runs a second copy. Needs root and runc (the service refuses to start
 * without them and the tests fail with its reason).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  api,
  containerLeftovers,
  containerProcesses,
  createServer,
  fileSize,
  hostProcesses,
  power,
  readLog,
  resources,
  runcList,
  sleep,
  startService,
  stopService,
  useService,
  waitFor,
  waitState,
  type ServiceHandle,
  type TestServer,
} from './confined-service.js';

const service = useService();

/** A child that leaves the container's first process group and session, then the startup command itself. */
const SETSID_ESCAPE = `setsid sh -c 'while :; do date >> escaped.txt; sleep 0.3; done' & exec sleep 1000`;

async function growing(file: string, what: string): Promise<void> {
  const before = fileSize(file);
  await waitFor(() => fileSize(file) > before, `${what} to grow`, 10_000);
}

/** The file does not grow over `ms` (several of the writer's 0.3 s rounds). */
async function stillOver(file: string, ms: number): Promise<{ before: number; after: number }> {
  const before = fileSize(file);
  await sleep(ms);
  return { before, after: fileSize(file) };
}

async function escapeEndsWith(signal: 'stop' | 'kill'): Promise<void> {
  const handle = service();
  const server = service.track(await createServer(handle, { name: `setsid ${signal}`, startup: SETSID_ESCAPE }));
  const escaped = path.join(server.volumeDir, 'escaped.txt');
  await power(handle, server, 'start');
  await waitState(handle, server, 'running');
  await growing(escaped, 'escaped.txt');

  // The escape really left: a shell leading a session of its own, beside the container's first process.
  const procs = containerProcesses(server);
  const loop = procs.find((proc) => proc.cmdline.startsWith('sh -c while :; do date >> escaped.txt'));
  expect(loop, procs.map((proc) => proc.cmdline).join('\n')).toBeDefined();
  expect(loop!.session).toBe(loop!.pid);
  const [container] = await runcList(handle.dataDir);
  expect(loop!.session).not.toBe(container?.pid);

  await power(handle, server, signal);
  await waitState(handle, server, 'offline', 15_000);
  const { before, after } = await stillOver(escaped, 1_600);
  expect(after, 'escaped.txt grew after the server read offline').toBe(before);
  expect(await containerLeftovers(handle, server)).toEqual([]);
  expect(hostProcesses().filter((proc) => proc.pid === loop!.pid)).toEqual([]);
}

describe('the end of a confined server', () => {
  it('power stop ends a process that escaped with setsid', async () => {
    await escapeEndsWith('stop');
  }, 60_000);

  it('power kill ends a process that escaped with setsid', async () => {
    await escapeEndsWith('kill');
  }, 60_000);
});

describe('a service SIGKILLed while a confined server runs', () => {
  const own: { handle: ServiceHandle | null; dataDir: string | null } = { handle: null, dataDir: null };
  afterEach(async () => {
    if (own.handle) expect(await stopService(own.handle), 'containers left by a graceful stop').toEqual([]);
    if (own.dataDir) fs.rmSync(own.dataDir, { recursive: true, force: true });
    own.handle = own.dataDir = null;
  }, 60_000);

  /** Processes anywhere on the host running this server's ticker: its script, with its uuid in the environment. */
  const tickers = (server: TestServer) =>
    hostProcesses().filter((proc) => {
      if (proc.cmdline !== 'sh ticker.sh') return false;
      try {
        return fs.readFileSync(`/proc/${proc.pid}/environ`, 'utf8').split('\0').includes(`P_SERVER_UUID=${server.uuid}`);
      } catch {
        return false; // Ended while we looked.
      }
    });

  it('leaves the container running; the next service adopts it: console, command, stats, stop; never two copies', async () => {
    const first = await startService();
    own.handle = first;
    own.dataDir = first.dataDir;
    const server = await createServer(first, {
      name: 'ticker',
      startup: 'sh ticker.sh',
      files: { 'ticker.sh': '(while :; do date >> ticks.txt; sleep 0.2; done) & while read line; do echo "got $line"; done\n' },
    });
    const ticks = path.join(server.volumeDir, 'ticks.txt');
    await power(first, server, 'start');
    await waitState(first, server, 'running');
    await growing(ticks, 'ticks.txt');
    expect(tickers(server)).toHaveLength(2); // the reading shell and the ticking subshell
    const pid = (await runcList(first.dataDir))[0]!.pid;

    // Only node itself, not its process group: what a crash or the OOM killer does to the service.
    first.service.proc.kill('SIGKILL');
    expect(await first.service.exited).toEqual({ code: null, signal: 'SIGKILL' });
    first.service.dispose();
    own.handle = null;

    // The container and its monitor do not depend on the service.
    await growing(ticks, 'ticks.txt with no service');
    expect((await runcList(first.dataDir)).map((c) => c.status)).toEqual(['running']);

    const second = await startService(first.dataDir, first.port);
    own.handle = second;
    await waitState(second, server, 'running');
    await growing(ticks, 'ticks.txt after the new start');
    // The same container, now this service's.
    const record = JSON.parse(fs.readFileSync(path.join(second.dataDir, 'run', `${server.uuid}.pid`), 'utf8')) as {
      pid: number;
      owner: { pid: number };
    };
    expect(record.pid).toBe(pid);
    expect(record.owner.pid).toBe(second.service.proc.pid);
    expect((await api(second, 'POST', `/api/client/servers/${server.identifier}/command`, { command: 'adopted?' })).status).toBe(
      204,
    );
    await waitFor(() => readLog(server).includes('got adopted?'), 'the command to reach the adopted server');
    const figures = await resources(second, server);
    expect(figures.current_state).toBe('running');
    expect(figures.resources.memory_bytes).toBeGreaterThan(0);

    // Never two copies: a start is a no-op.
    await power(second, server, 'start');
    await sleep(500);
    expect((await runcList(second.dataDir)).map((c) => [c.id, c.pid])).toEqual([[`quetzal-${server.uuid}`, pid]]);
    expect(tickers(server)).toHaveLength(2);

    await power(second, server, 'stop');
    await waitState(second, server, 'offline', 15_000);
    expect(await containerLeftovers(second, server), readLog(server)).toEqual([]);
    expect(tickers(server)).toEqual([]);
  }, 120_000);
});
