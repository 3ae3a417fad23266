/**
 * A confined server's output outside its box, and servers that outlive the
 * service (docs/reference/containment.md's "nothing of the host is open inside the box", docs/reference/power-and-console.md#servers-outlive-the-service),
 * attacked from inside real confined servers (their scripts in their volumes)
 * against a real service with CONTAINMENT=on: the `ftruncate()` of stdout, a
 * look for host descriptors in its own and its parent's /proc, a 1 GB output
 * flood with /health polled every 50 ms, the throttle, graceful stops with
 * `keep` and `stop`, `servers:stop`. Needs root, runc and conmon: fails,
 * saying so, without them.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from '../platform/service-process.js';
import { TestSocket } from '../websocket/helpers.js';
import {
  api,
  cli,
  containerLeftovers,
  createServer,
  hostProcesses,
  machineOverloaded,
  power,
  readLog,
  runcList,
  sleep,
  startService,
  stopService,
  waitFor,
  waitState,
  type ServiceHandle,
  type TestServer,
} from './confined-service.js';

const MiB = 1024 * 1024;

/** Looks for host files among its own descriptors, its parent's and the box's first process's; tries to grow its stdout to 16 TiB. */
const PROBE_SCRIPT = `
const fs = require('fs');
const seen = [];
for (const pid of ['self', String(process.ppid), '1']) {
  let fds = [];
  try { fds = fs.readdirSync('/proc/' + pid + '/fd'); } catch (err) { seen.push(pid + ' unreadable ' + err.code); continue; }
  for (const fd of fds) {
    try { seen.push(pid + ' ' + fd + ' ' + fs.readlinkSync('/proc/' + pid + '/fd/' + fd)); } catch {}
  }
}
let outcome;
try { fs.ftruncateSync(1, 16 * 2 ** 40); outcome = 'ok'; } catch (err) { outcome = err.code; }
console.log('stdout is a ' + (fs.fstatSync(1).isFIFO() ? 'pipe' : 'file'));
console.log('ftruncate ' + outcome);
for (const line of seen) console.log('fd ' + line);
console.log('probe done');
setInterval(() => {}, 1000);
`;

/** Prints `megabytes` MiB of 100-byte lines as fast as the pipe takes them, then says so and waits. */
function floodScript(megabytes: number): string {
  return `
const fs = require('fs');
const line = 'x'.repeat(99) + '\\n';
const chunk = Buffer.from(line.repeat(10486).slice(0, ${MiB}));
for (let i = 0; i < ${megabytes}; i++) fs.writeSync(1, chunk);
fs.writeSync(1, '\\nflood done\\n');
setInterval(() => {}, 1000);
`;
}

/**
 * Polls /health every 50 ms, from a process of its own (the test's own event
 * loop, busy with its sockets, must not count as the service's delay), while
 * `during` runs; the latencies, in ms. `check` runs every 50 ms meanwhile.
 */
async function healthLatencies(
  handle: ServiceHandle,
  during: () => Promise<void>,
  check: () => void = () => {},
): Promise<number[]> {
  const poller = spawn(process.execPath, ['-e', HEALTH_POLLER, `http://127.0.0.1:${handle.port}/health`], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let output = '';
  poller.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const ended = new Promise((resolve) => poller.once('exit', resolve));
  const checker = setInterval(check, 50);
  try {
    await during();
  } finally {
    clearInterval(checker);
    poller.stdin.end();
    await ended;
  }
  return JSON.parse(output) as number[];
}

const HEALTH_POLLER = `
const latencies = [];
let running = true;
process.stdin.on('end', () => (running = false));
process.stdin.resume();
(async () => {
  while (running) {
    const started = performance.now();
    await fetch(process.argv[1]).then((res) => res.text());
    latencies.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  process.stdout.write(JSON.stringify(latencies));
})();
`;

/**
 * A console socket in a process of its own that only counts: the service's
 * fan-out is what is measured, not this test's parsing of a million frames.
 * Resolves once authenticated; `stop()` gives the count of console lines.
 */
async function countingSocket(handle: ServiceHandle, server: TestServer): Promise<{ stop(): Promise<number> }> {
  const credentials = await api(handle, 'GET', `/api/client/servers/${server.identifier}/websocket`);
  const { token, socket: url } = (credentials.body as { data: { token: string; socket: string } }).data;
  const child = spawn(process.execPath, ['-e', COUNTING_SOCKET, url, token], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const ended = new Promise((resolve) => child.once('exit', resolve));
  await waitFor(() => output.includes('ready'), 'the counting socket to authenticate');
  return {
    async stop() {
      child.stdin.end();
      await ended;
      return Number(/count (\d+)/.exec(output)?.[1] ?? -1);
    },
  };
}

const COUNTING_SOCKET = `
const WebSocket = require('ws');
const ws = new WebSocket(process.argv[1]);
let count = 0;
ws.on('open', () => ws.send(JSON.stringify({ event: 'auth', args: [process.argv[2]] })));
ws.on('message', (data) => {
  const text = data.toString();
  if (text.startsWith('{"event":"console output"')) count += 1;
  else if (text.includes('"auth success"')) process.stdout.write('ready\\n');
});
process.stdin.on('end', () => { process.stdout.write('count ' + count + '\\n'); process.exit(0); });
process.stdin.resume();
`;

async function consoleSocket(handle: ServiceHandle, server: TestServer): Promise<TestSocket> {
  const credentials = await api(handle, 'GET', `/api/client/servers/${server.identifier}/websocket`);
  expect(credentials.status).toBe(200);
  const { token, socket: url } = (credentials.body as { data: { token: string; socket: string } }).data;
  const socket = await TestSocket.open(url);
  socket.send('auth', [token]);
  await socket.waitFor('auth success');
  return socket;
}

function logSizes(server: TestServer): { log: number; rotated: number } {
  const size = (file: string) => {
    try {
      return fs.statSync(file).size;
    } catch {
      return 0;
    }
  };
  return { log: size(server.logFile), rotated: size(`${server.logFile}.1`) };
}

function conmonsOf(server: TestServer) {
  return hostProcesses().filter((proc) => /(^|\/)conmon /.test(proc.cmdline) && proc.cmdline.includes(`quetzal-${server.uuid}`));
}

const services: ServiceHandle[] = [];
afterEach(async () => {
  for (const handle of services.splice(0)) {
    await stopService(handle);
    fs.rmSync(handle.dataDir, { recursive: true, force: true });
  }
}, 60_000);

async function service(env: Record<string, string> = {}, handle?: ServiceHandle): Promise<ServiceHandle> {
  const started = await startService(handle?.dataDir, handle?.port, env);
  services.push(started);
  return started;
}

describe("a confined server's output, held outside its box (docs/reference/containment.md, docs/reference/power-and-console.md#servers-outlive-the-service)", () => {
  it("has pipes for stdio and no host file among its, its parent's or its first process's descriptors; ftruncate of stdout fails and the log stays small", async () => {
    const handle = await service();
    const server = await createServer(handle, { name: 'probe', startup: 'node probe.js', files: { 'probe.js': PROBE_SCRIPT } });
    const before = fs.statSync(handle.dataDir);
    await power(handle, server, 'start');
    await waitFor(() => readLog(server).includes('probe done'), 'the probe to report', 20_000);
    const log = readLog(server);
    expect(log).toContain('stdout is a pipe');
    expect(log).toContain('ftruncate EINVAL');
    const fds = log
      .split('\n')
      .filter((line) => line.startsWith('fd '))
      .map((line) => line.slice(3));
    expect(fds.length).toBeGreaterThan(6);
    for (const entry of fds) {
      const [pid, fd, target] = entry.split(' ');
      // Node's own descriptors: pipes, event polls, its /proc listing, /dev/null; never a file of the host's.
      expect(target, entry).toMatch(/^(pipe:|anon_inode:|socket:|\/dev\/(null|pts\/\d+|urandom)$|\/proc\/)/);
      if (pid === '1' || (pid !== 'self' && Number(fd) <= 2)) expect(target, entry).toMatch(/^pipe:/);
    }
    // The first process holds 0, 1 and 2 and nothing else.
    expect(
      fds
        .filter((entry) => entry.startsWith('1 '))
        .map((entry) => entry.split(' ')[1])
        .sort(),
    ).toEqual(['0', '1', '2']);
    const stat = fs.statSync(server.logFile);
    expect(stat.size).toBeLessThan(64 * 1024);
    expect(stat.blocks * 512).toBeLessThan(1 * MiB);
    expect(fs.statSync(handle.dataDir).dev).toBe(before.dev);
    expect((await fetch(`http://127.0.0.1:${handle.port}/health`)).status).toBe(200);
    await power(handle, server, 'kill');
    await waitState(handle, server, 'offline', 15_000);
  }, 90_000);

  it('floods 1 GB while /health is polled every 50 ms and a socket watches (throttle off): answers stay prompt, the log within its cap', async () => {
    const handle = await service({ CONSOLE_LOG_MB: '4', CONSOLE_THROTTLE_LINES: '100000000' });
    const server = await createServer(handle, {
      name: 'flood',
      startup: 'node flood.js',
      files: { 'flood.js': floodScript(1024) },
    });
    const socket = await countingSocket(handle, server);
    const quiet = await healthLatencies(handle, () => sleep(1_500));
    let largest = { log: 0, rotated: 0 };
    const flooding = await healthLatencies(
      handle,
      async () => {
        await power(handle, server, 'start');
        await waitFor(() => readLog(server).includes('flood done'), 'the flood to end', 240_000);
      },
      () => {
        const sizes = logSizes(server);
        largest = { log: Math.max(largest.log, sizes.log), rotated: Math.max(largest.rotated, sizes.rotated) };
      },
    );
    const p95 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.95)]!;
    const normal = Math.max(...quiet);
    const worst = Math.max(...flooding);
    const load = fs.readFileSync('/proc/loadavg', 'utf8').trim();
    const detail = `quiet max ${normal.toFixed(1)} ms p95 ${p95(quiet).toFixed(1)} ms, flooding max ${worst.toFixed(1)} ms p95 ${p95(flooding).toFixed(1)} ms over ${flooding.length} polls; load ${load}`;
    console.log(detail);
    // The flood and its monitor take a core each: on a machine with more work than cores (other sessions'
    // tests), a poll can wait for a core whatever the service does, so the bound is on the 95th percentile
    // there, and its 100 ms grow with the runnable tasks per core (a poll waits its turn among them: at a
    // load of 5 on 2 cores one CI run saw a p95 of 117 ms, where four others saw 18–32 ms). A frozen
    // service (seconds) fails either way; bench/console-flood.ts measures the event loop's own stalls.
    const perCore = Math.max(1, os.loadavg()[0]! / os.cpus().length);
    if (machineOverloaded()) expect(p95(flooding), detail).toBeLessThanOrEqual(p95(quiet) + 100 * perCore);
    else expect(worst, detail).toBeLessThanOrEqual(normal + 100);
    expect(largest.log, 'the console log').toBeLessThanOrEqual(4 * MiB);
    expect(largest.rotated, 'its previous copy').toBeLessThanOrEqual(4 * MiB);
    expect(await socket.stop(), 'lines reached the socket').toBeGreaterThan(1_000);
    await power(handle, server, 'kill');
    await waitState(handle, server, 'offline', 15_000);
  }, 300_000);

  it("throttles a flood on the console with Wings' message and stops the server after 5 triggers", async () => {
    const handle = await service({ CONSOLE_LOG_MB: '4' });
    const server = await createServer(handle, {
      name: 'throttled',
      startup: 'node flood.js',
      files: { 'flood.js': floodScript(1024) },
    });
    const socket = await consoleSocket(handle, server);
    await power(handle, server, 'start');
    await socket.waitFor(
      'console output',
      (frame) => frame.args?.[0] === 'Server is outputting console data too quickly -- throttling...',
      30_000,
    );
    await waitState(handle, server, 'offline', 60_000);
    const messages = socket.lines().filter((line) => line === 'Server is outputting console data too quickly -- throttling...');
    expect(messages.length).toBeGreaterThanOrEqual(5);
    expect(socket.lines()).toContain('Your server is being stopped for outputting too much data in a short period of time.');
    expect(readLog(server)).not.toContain('flood done');
    socket.close();
    expect(await containerLeftovers(handle, server)).toEqual([]);
  }, 120_000);
});

describe('servers that outlive the service (docs/reference/power-and-console.md#servers-outlive-the-service)', () => {
  const TICKER = 'i=0; (while :; do i=$((i+1)); echo "tick $i"; sleep 0.2; done) & while read line; do echo "got $line"; done';

  it('SERVERS_ON_SHUTDOWN=keep: a graceful stop leaves the server and its monitor running; the next start adopts it, output from meanwhile included; servers:stop stops it', async () => {
    const first = await service({ SERVERS_ON_SHUTDOWN: 'keep' });
    const server = await createServer(first, { name: 'kept', startup: TICKER });
    await power(first, server, 'start');
    await waitFor(() => readLog(server).includes('tick 2'), 'ticks');
    const [container] = await runcList(first.dataDir);
    first.service.proc.kill('SIGTERM');
    expect(await first.service.exited).toEqual({ code: 0, signal: null });

    // Running without a service, its monitor writing its output.
    expect((await runcList(first.dataDir)).map((c) => [c.status, c.pid])).toEqual([['running', container!.pid]]);
    expect(conmonsOf(server)).toHaveLength(1);
    const lastTick = () =>
      Math.max(
        ...readLog(server)
          .split('\n')
          .filter((l) => l.startsWith('tick '))
          .map((l) => Number(l.slice(5))),
      );
    const whileDown = lastTick() + 3;
    await waitFor(() => lastTick() >= whileDown, 'ticks while no service runs');

    const second = await service({ SERVERS_ON_SHUTDOWN: 'keep' }, first);
    await waitState(second, server, 'running');
    const socket = await consoleSocket(second, server);
    socket.send('send logs');
    await socket.waitFor('console output', (frame) => frame.args?.[0] === `tick ${whileDown}`);
    expect(
      (await api(second, 'POST', `/api/client/servers/${server.identifier}/command`, { command: 'still there?' })).status,
    ).toBe(204);
    await socket.waitFor('console output', (frame) => frame.args?.[0] === 'got still there?');
    socket.close();
    expect((await runcList(second.dataDir)).map((c) => c.pid)).toEqual([container!.pid]);

    // servers:stop with the service running: its owner notices the end and cleans up.
    expect(await cli(second, ['servers:stop'])).toEqual({ stopped: [server.uuid] });
    await waitState(second, server, 'offline', 15_000);
    await waitFor(async () => (await containerLeftovers(second, server)).length === 0, 'the container to be removed');
    expect(conmonsOf(server)).toEqual([]);
  }, 120_000);

  it('servers:stop with no service running stops what a kept shutdown left; the next start cleans up and can start it once', async () => {
    const first = await service({ SERVERS_ON_SHUTDOWN: 'keep' });
    const server = await createServer(first, { name: 'kept', startup: TICKER });
    await power(first, server, 'start');
    await waitFor(() => readLog(server).includes('tick 2'), 'ticks');
    first.service.proc.kill('SIGTERM');
    await first.service.exited;
    expect((await runcList(first.dataDir)).map((c) => c.status)).toEqual(['running']);

    expect(await cli(first, ['servers:stop', '--server', server.identifier])).toEqual({ stopped: [server.uuid] });
    expect((await runcList(first.dataDir)).filter((c) => c.status === 'running')).toEqual([]);
    expect(conmonsOf(server)).toEqual([]);
    expect(await cli(first, ['servers:stop'])).toEqual({ stopped: [] });

    const second = await service({ SERVERS_ON_SHUTDOWN: 'keep' }, first);
    expect(await containerLeftovers(second, server)).toEqual([]);
    await power(second, server, 'start');
    await waitState(second, server, 'running');
    expect((await runcList(second.dataDir)).map((c) => c.status)).toEqual(['running']);
    expect(conmonsOf(server)).toHaveLength(1);
  }, 120_000);

  it('SERVERS_ON_SHUTDOWN=stop: a graceful stop stops the server and its monitor, as before', async () => {
    const handle = await service({ SERVERS_ON_SHUTDOWN: 'stop' });
    const server = await createServer(handle, { name: 'stopped', startup: TICKER });
    await power(handle, server, 'start');
    await waitFor(() => readLog(server).includes('tick 1'), 'ticks');
    services.splice(services.indexOf(handle), 1);
    expect(await stopService(handle)).toEqual([]);
    expect(handle.service.proc.exitCode).toBe(0);
    expect(conmonsOf(server)).toEqual([]);
    fs.rmSync(handle.dataDir, { recursive: true, force: true });
  }, 60_000);
});
