/**
 * Console flood benchmark (issue 18 part 2, docs/reference/power-and-console.md#servers-outlive-the-service): what a confined server
 * printing 1 GB as fast as it can does to the service.
 *
 * In this one process: the local daemon with containment on (runc, conmon),
 * a watcher of the flooding server's console (the websocket hub's reader:
 * `watchConsole`, each line through the throttle and serialised as a frame
 * would be), and an HTTP server answering `/health` on the same event loop.
 * A child process polls `/health` every 50 ms (so that its own timing is not
 * this loop's); `monitorEventLoopDelay` records this loop's stalls. Two runs
 * in the same process: quiet (the server runs, prints nothing), then the
 * flood. Targets: the API's p99 during the flood ≤ 100 ms, and so the
 * event loop's longest stall.
 *
 *   npm run bench:flood -- [--megabytes 1024] [--throttle on|off]
 *
 * `--throttle off` (the default here) forwards every line, the reader's
 * worst case; `on` uses Wings' defaults (the server would then be stopped
 * after 5 triggers: the bench ignores the breach to keep it flooding).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { DaemonServer } from '../src/daemon/daemon.js';
import { resolveContainment } from '../src/daemon/local/container/container-runtime.js';
import { LocalDaemon } from '../src/daemon/local/local-daemon.js';
import { ConsoleThrottle, DEFAULT_THROTTLE } from '../src/modules/websocket/console-throttle.js';
import { formatMs, percentile, table } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    megabytes: { type: 'string', default: '1024' },
    throttle: { type: 'string', default: 'off' },
    'quiet-seconds': { type: 'string', default: '10' },
  },
});
const MEGABYTES = Number(values.megabytes);
const THROTTLE = values.throttle === 'on';
const QUIET_SECONDS = Number(values['quiet-seconds']);
const TARGET_MS = 100;
const MiB = 1024 * 1024;

const FLOOD = `node -e '
const fs = require("fs");
const chunk = Buffer.from(("x".repeat(99) + "\\n").repeat(10486).slice(0, ${MiB}));
for (let i = 0; i < ${MEGABYTES}; i++) fs.writeSync(1, chunk);
fs.writeSync(1, "flood done\\n");
setInterval(() => {}, 1000);'`;

const POLLER = `
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

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bench-flood-'));
const runtime = await resolveContainment(
  { mode: 'on', uid: 988, dataDir, runDir: path.join(dataDir, 'run') },
  { warn: () => undefined },
).catch((err: unknown) => {
  console.error(String(err));
  process.exit(1);
});
const daemon = new LocalDaemon(dataDir, { containers: runtime, stopGraceMs: 2_000 });
await daemon.start();

const api = http.createServer((_req, res) => res.end('{"status":"ok"}'));
await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(api.address() as { port: number }).port}/health`;

interface RunFigures {
  readonly latencies: number[];
  readonly maxStallMs: number;
  readonly lines: number;
  readonly seconds: number;
  readonly logBytes: number;
}

async function run(startup: string, until: (server: DaemonServer) => Promise<void>): Promise<RunFigures> {
  const server: DaemonServer = {
    uuid: randomUUID(),
    startup,
    stopCommand: null,
    limits: { memoryMiB: 1024, cpuPercent: 0, diskMiB: 0, pids: 512 },
  };
  await daemon.prepareVolume(server);
  let lines = 0;
  const throttle = new ConsoleThrottle(THROTTLE ? DEFAULT_THROTTLE : { ...DEFAULT_THROTTLE, lines: Number.MAX_SAFE_INTEGER });
  const frames: string[] = [];
  const stopWatching = daemon.watchConsole(server, (line) => {
    if (throttle.line() !== 'forward') return;
    lines += 1;
    // What the hub does per line and socket: a frame.
    frames.push(JSON.stringify({ event: 'console output', args: [line] }));
    if (frames.length > 1000) frames.length = 0;
  });
  const poller = spawn(process.execPath, ['-e', POLLER, url], { stdio: ['pipe', 'pipe', 'inherit'] });
  let output = '';
  poller.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const polled = new Promise((resolve) => poller.once('exit', resolve));
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const started = performance.now();
  let logBytes = 0;
  const logPath = path.join(daemon.paths.logs, `${server.uuid}.log`);
  const sizes = setInterval(() => {
    for (const file of [logPath, `${logPath}.1`]) {
      try {
        logBytes = Math.max(logBytes, fs.statSync(file).size);
      } catch {
        // not yet
      }
    }
  }, 100);
  let seconds = 0;
  try {
    await daemon.power(server, 'start');
    await until(server);
  } finally {
    seconds = (performance.now() - started) / 1000;
    loop.disable();
    clearInterval(sizes);
    poller.stdin.end();
    await polled;
    stopWatching();
    await daemon.power(server, 'kill');
  }
  return { latencies: JSON.parse(output) as number[], maxStallMs: loop.max / 1e6, lines, seconds, logBytes };
}

const logOf = (server: DaemonServer) => path.join(daemon.paths.logs, `${server.uuid}.log`);
const quiet = await run('exec sleep 1000', () => new Promise((resolve) => setTimeout(resolve, QUIET_SECONDS * 1000)));
const flood = await run(FLOOD, async (server) => {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const tail = await tailOf(logOf(server));
    if (tail.includes('flood done')) return;
    if (Date.now() > deadline) throw new Error('the flood did not end within 10 minutes');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
});

async function tailOf(file: string): Promise<string> {
  const handle = await fs.promises.open(file, 'r').catch(() => null);
  if (!handle) return '';
  try {
    const { size } = await handle.stat();
    const buffer = Buffer.alloc(Math.min(size, 4096));
    await handle.read(buffer, 0, buffer.length, size - buffer.length);
    return buffer.toString();
  } finally {
    await handle.close();
  }
}

function row(name: string, figures: RunFigures): string[] {
  const sorted = [...figures.latencies].sort((a, b) => a - b);
  return [
    name,
    String(sorted.length),
    formatMs(percentile(sorted, 50)),
    formatMs(percentile(sorted, 99)),
    formatMs(sorted.at(-1) ?? NaN),
    formatMs(figures.maxStallMs),
    `${figures.seconds.toFixed(1)} s`,
    String(figures.lines),
    `${(figures.logBytes / MiB).toFixed(1)} MiB`,
  ];
}

console.log(
  `console flood: ${MEGABYTES} MiB of 100-byte lines, throttle ${THROTTLE ? 'on (Wings defaults)' : 'off'}, CONSOLE_LOG_MB 50`,
);
console.log(
  `machine: ${os.cpus().length} cores, load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
console.log(
  table(
    ['run', 'polls', '/health p50', 'p99', 'max', 'event loop max stall', 'duration', 'lines forwarded', 'largest log file'],
    [row('quiet', quiet), row('flood', flood)],
  ),
);
const p99 = percentile(
  [...flood.latencies].sort((a, b) => a - b),
  99,
);
console.log(
  `flood p99 ${formatMs(p99)} (target ≤ ${TARGET_MS} ms): ${p99 <= TARGET_MS ? 'met' : 'NOT met'}; longest stall ${formatMs(flood.maxStallMs)}`,
);

api.close();
await daemon.close();
fs.rmSync(dataDir, { recursive: true, force: true });
