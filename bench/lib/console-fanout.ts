/**
 * The websocket half of `bench:console` (issue 12, docs/reference/power-and-console.md#websocket): one server
 * printing LINES_PER_SECOND console lines, each stamped with the time it was
 * printed, to SOCKETS authenticated sockets of a real service for SECONDS;
 * the delivery latency of every line to every socket (received − printed,
 * one clock: the same machine), lines delivered and sockets dropped, and the
 * service's RSS before and after. Targets: p99 ≤ 50 ms, RSS growth ≤ 20 MiB.
 */
import fs from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { percentile } from './stats.js';

export interface FanOutOptions {
  base: string;
  dataDir: string;
  servicePid: number;
  /** Creates a server with this startup command through the admin CLI; returns its uuid and identifier. */
  createServer(startup: string): { uuid: string; identifier: string };
  /**
   * Makes another user who may watch the server's console (a subuser with
   * websocket.connect) and returns the name and password to sign in with:
   * the service holds each user to 20 sockets per server, so 50 sockets
   * come from several people, as they would.
   */
  addWatcher(serverIdentifier: string, index: number): { username: string; password: string };
  username: string;
  password: string;
  sockets: number;
  linesPerSecond: number;
  seconds: number;
}

export interface FanOutResult {
  sockets: number;
  linesPerSecond: number;
  seconds: number;
  delivered: number;
  expected: number;
  /** Lines the server printed in the window (the span of line numbers delivered). */
  printed: number;
  droppedSockets: number;
  latencyMs: { p50: number; p99: number; max: number };
  rssMiB: { before: number; after: number; growth: number };
}

/**
 * Prints `t=<ms since epoch> n=<n>` lines at a steady rate: every 10 ms, as
 * many as are due since the start, so a late timer (a busy machine) catches
 * up instead of printing fewer lines.
 */
const FLOOD = `
const rate = Number(process.argv[2]);
const start = Date.now();
let n = 0;
setInterval(() => {
  const due = Math.floor(((Date.now() - start) * rate) / 1000);
  let out = '';
  for (; n < due; n++) out += 't=' + Date.now() + ' n=' + n + ' ' + 'x'.repeat(60) + '\\n';
  if (out) process.stdout.write(out);
}, 10);
`;

/** What the service allows one user on one server (src/modules/websocket/websocket.frames.ts). */
const SOCKETS_PER_USER = 20;

function rssMiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kib / 1024;
}

async function signIn(base: string, username: string, password: string): Promise<{ cookie: string; csrf: string }> {
  const res = await fetch(`${base}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ user: username, password }),
  });
  if (!res.ok) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
  const cookies = res.headers.getSetCookie().map((c) => c.split(';')[0]!);
  const csrf = decodeURIComponent(cookies.find((c) => c.startsWith('XSRF-TOKEN='))!.slice('XSRF-TOKEN='.length));
  return { cookie: cookies.join('; '), csrf };
}

export async function measureFanOut(options: FanOutOptions): Promise<FanOutResult> {
  const { uuid, identifier } = options.createServer(`node flood.mjs ${options.linesPerSecond}`);
  const volume = path.join(options.dataDir, 'volumes', uuid);
  fs.mkdirSync(volume, { recursive: true });
  fs.writeFileSync(path.join(volume, 'flood.mjs'), FLOOD, { mode: 0o644 });

  const session = await signIn(options.base, options.username, options.password);
  const headersOf = (signedIn: { cookie: string; csrf: string }) => ({
    cookie: signedIn.cookie,
    accept: 'application/json',
    'content-type': 'application/json',
    'x-xsrf-token': signedIn.csrf,
  });
  const headers = headersOf(session);
  const api = `${options.base}/api/client/servers/${identifier}`;
  // The owner and as many watchers as it takes, SOCKETS_PER_USER sockets each.
  const watchers = [headers];
  for (let i = 1; i * SOCKETS_PER_USER < options.sockets; i++) {
    const watcher = options.addWatcher(identifier, i);
    watchers.push(headersOf(await signIn(options.base, watcher.username, watcher.password)));
  }

  const latencies: number[] = [];
  let measuring = false;
  let delivered = 0;
  let dropped = 0;
  let authenticated = 0;
  let firstLine = Number.POSITIVE_INFINITY;
  let lastLine = -1;
  const sockets: WebSocket[] = [];
  for (let i = 0; i < options.sockets; i++) {
    const asUser = watchers[Math.floor(i / SOCKETS_PER_USER)]!;
    const { data } = (await (await fetch(`${api}/websocket`, { headers: asUser })).json()) as {
      data: { token: string; socket: string };
    };
    const socket = new WebSocket(data.socket, { headers: { origin: options.base } });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    socket.send(JSON.stringify({ event: 'auth', args: [data.token] }));
    socket.on('message', (raw: Buffer) => {
      const received = Date.now();
      const frame = JSON.parse(raw.toString('utf8')) as { event: string; args?: string[] };
      if (frame.event === 'auth success') authenticated++;
      if (frame.event !== 'console output' || !measuring) return;
      const stamp = /^t=(\d+) n=(\d+) /.exec(frame.args?.[0] ?? '');
      if (!stamp) return;
      latencies.push(received - Number(stamp[1]));
      delivered++;
      const n = Number(stamp[2]);
      firstLine = Math.min(firstLine, n);
      lastLine = Math.max(lastLine, n);
    });
    socket.on('close', () => {
      if (measuring) dropped++;
    });
    sockets.push(socket);
  }

  const started = await fetch(`${api}/power`, { method: 'POST', headers, body: JSON.stringify({ signal: 'start' }) });
  if (started.status !== 204) throw new Error(`power start: ${started.status} ${await started.text()}`);
  // Warm-up: the process starts, the readers and sockets settle.
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  // Every socket must be in: a refused one would make the fan-out look cheaper than it is.
  if (authenticated !== options.sockets)
    throw new Error(`only ${authenticated} of ${options.sockets} sockets were authenticated`);
  const before = rssMiB(options.servicePid);
  measuring = true;
  await new Promise((resolve) => setTimeout(resolve, options.seconds * 1000));
  measuring = false;
  const after = rssMiB(options.servicePid);

  await fetch(`${api}/power`, { method: 'POST', headers, body: JSON.stringify({ signal: 'kill' }) });
  for (const socket of sockets) socket.close();

  latencies.sort((a, b) => a - b);
  return {
    sockets: options.sockets,
    linesPerSecond: options.linesPerSecond,
    seconds: options.seconds,
    delivered,
    expected: options.sockets * options.linesPerSecond * options.seconds,
    printed: lastLine - firstLine + 1,
    droppedSockets: dropped,
    latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies.at(-1) ?? 0 },
    rssMiB: { before: round1(before), after: round1(after), growth: round1(after - before) },
  };
}

const round1 = (value: number) => Math.round(value * 10) / 10;
