/**
 * What the end-to-end containment tests share: a real service (`quetzal
 * serve`, node on bin/quetzal.js, in a process group of its own) with
 * CONTAINMENT=on, servers made by the admin command line in its DATA_DIR and
 * driven over HTTP with the initial key, and what the host says of their
 * containers (runc's list, the cgroups, /proc). With CONTAINMENT=on a machine
 * without root or runc makes the service refuse to start: the tests then fail
 * with its reason, on purpose (they are about confinement, not about a machine
 * that cannot confine).
 */
import { execFile, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { readCgroupHierarchy } from '../../src/daemon/local/container/cgroup-hierarchy.js';
import { containerId, defaultCgroupsPath } from '../../src/daemon/local/container/container-spec.js';
import { findRunc } from '../../src/daemon/local/container/runc.js';
import { joinConsoleRecords } from '../../src/daemon/local/process/console-record.js';
import { freePort, ROOT, sleep, waitHealthy, type StartedService } from '../platform/service-process.js';
import { openSqliteConnection } from '../../src/db/sqlite-driver.js';

export { sleep } from '../platform/service-process.js';

const run = promisify(execFile);
const BIN = path.join(ROOT, 'bin/quetzal.js');
/** The user the first start creates (docs/reference/configuration.md#first-start), owner of the initial key. */
export const BOOTSTRAP_USER = 'admin';
/** SERVER_UID: the shared uid of servers without a slot (none here), and the one a volume had before per-server uids. */
export const SERVER_UID = 988;
/** Put in the service's environment: no confined process may see it. */
export const ENV_CANARY = 'QUETZAL_CONTAINMENT_CANARY';

export interface ServiceHandle {
  readonly service: StartedService;
  readonly dataDir: string;
  readonly port: number;
  /** The service's whole environment (the admin command line gets the same). */
  readonly env: Readonly<Record<string, string>>;
  readonly token: string;
}

export interface TestServer {
  readonly uuid: string;
  readonly identifier: string;
  /** The uid (and gid) it runs as: its service's SERVER_UID_RANGE first + its uid slot. */
  readonly uid: number;
  readonly volumeDir: string;
  readonly logFile: string;
}

export interface Limits {
  memory?: number;
  cpu?: number;
  disk?: number;
  pids?: number;
  inodes?: number;
}

export function newDataDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-containment-'));
}

/**
 * A SERVER_UID_RANGE of 1,000 uids of its own for each service the tests
 * start: uids are the machine's, and per-uid kernel limits (inotify
 * instances) must not be shared with another test running at the same time.
 */
function testUidRange(): string {
  const first = 300_000 + randomInt(0, 1_000) * 1_000;
  return `${first}-${first + 999}`;
}

/** The environment a process manager would give the service: none of the test runner's variables. */
export function serviceEnv(dataDir: string, port: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SERVER_UID_RANGE: testUidRange(),
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}`,
    HOME: process.env.HOME ?? os.homedir(),
    DATA_DIR: dataDir,
    DATABASE_URL: `sqlite:${path.join(dataDir, 'quetzal.sqlite')}`,
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'warn',
    CONTAINMENT: 'on',
    // Tests that stop their service expect no container left; those about keeping servers (docs/reference/power-and-console.md#servers-outlive-the-service) say `keep`.
    SERVERS_ON_SHUTDOWN: 'stop',
    // Parallel services must not all bind SFTP's 2022.
    SFTP_PORT: '0',
    [ENV_CANARY]: `canary-${path.basename(dataDir)}`,
    ...extra,
  };
}

/**
 * Starts `quetzal serve` on `dataDir` and `port` (both may be reused: a
 * restart), as startDetached does, but leaves the folder in place on
 * dispose(), which kills only the service's own process group.
 */
export function launchService(env: Record<string, string>): StartedService {
  const proc = spawn(process.execPath, [BIN, 'serve'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  proc.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  proc.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    proc,
    port: Number(env.PORT),
    dataDir: env.DATA_DIR!,
    output: () => output,
    exited,
    dispose() {
      try {
        process.kill(-proc.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
    },
  };
}

/** A service answering /health, with its initial key. */
export async function startService(
  dataDir = newDataDir(),
  port?: number,
  extraEnv: Record<string, string> = {},
): Promise<ServiceHandle> {
  const env = serviceEnv(dataDir, port ?? (await freePort()), extraEnv);
  const service = launchService(env);
  try {
    await waitHealthy(service, 60_000);
  } catch (err) {
    service.dispose();
    throw err;
  }
  const token = fs.readFileSync(path.join(dataDir, 'initial-api-key'), 'utf8').trim();
  return { service, dataDir, port: service.port, env, token };
}

/**
 * Stops the service as a process manager would (SIGTERM, which stops its
 * servers), then deletes whatever container is left and kills what is left
 * of its process group. Returns the containers that were left: a graceful
 * stop should leave none.
 */
export async function stopService(handle: ServiceHandle): Promise<RuncContainer[]> {
  const { proc } = handle.service;
  if (proc.exitCode === null && proc.signalCode === null) {
    proc.kill('SIGTERM');
    await Promise.race([handle.service.exited, sleep(30_000)]);
  }
  const left = await runcList(handle.dataDir);
  for (const container of left) await runc(handle.dataDir, ['delete', '--force', container.id]).catch(() => undefined);
  handle.service.dispose();
  return left;
}

/**
 * One confined service for a test file: started before its tests, stopped
 * after them (no container may be left); each test's servers are killed
 * after it if still running, and then runc must list nothing.
 */
export function useService(): { (): ServiceHandle; track(server: TestServer): TestServer } {
  let handle: ServiceHandle | null = null;
  const servers: TestServer[] = [];
  beforeAll(async () => {
    handle = await startService();
  }, 90_000);
  afterEach(async () => {
    if (!handle) return;
    for (const server of servers.splice(0)) {
      if ((await state(handle, server)) !== 'offline') {
        await power(handle, server, 'kill');
        await waitState(handle, server, 'offline', 20_000);
      }
    }
    expect(await runcList(handle.dataDir), 'containers left after the test').toEqual([]);
  }, 60_000);
  afterAll(async () => {
    if (!handle) return;
    const dataDir = handle.dataDir;
    const left = await stopService(handle);
    handle = null;
    fs.rmSync(dataDir, { recursive: true, force: true });
    expect(left, 'containers left by a graceful stop').toEqual([]);
  }, 60_000);
  const current = () => {
    if (!handle) throw new Error('the service did not start');
    return handle;
  };
  current.track = (server: TestServer) => {
    servers.push(server);
    return server;
  };
  return current;
}

/** The admin command line in the service's DATA_DIR, with --json: its one JSON object. */
export async function cli(handle: ServiceHandle, args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [BIN, ...args, '--json'], { cwd: ROOT, env: { ...handle.env } });
  return JSON.parse(stdout) as Record<string, unknown>;
}

/**
 * `server:create` owned by the bootstrap user, then `files` written into its
 * volume (as root: the first confined start gives the volume to SERVER_UID).
 */
export async function createServer(
  handle: ServiceHandle,
  options: { name: string; startup?: string; stopCommand?: string; limits?: Limits; files?: Record<string, string | Buffer> },
): Promise<TestServer> {
  const args = ['server:create', '--owner', BOOTSTRAP_USER, '--name', options.name];
  if (options.startup !== undefined) args.push('--startup', options.startup);
  if (options.stopCommand !== undefined) args.push('--stop-command', options.stopCommand);
  for (const [flag, value] of Object.entries(options.limits ?? {})) args.push(`--${flag}`, String(value));
  const created = await cli(handle, args);
  const uuid = String(created.uuid);
  const server = {
    uuid,
    identifier: String(created.identifier),
    uid: serverUid(handle, uuid),
    volumeDir: path.join(handle.dataDir, 'volumes', uuid),
    logFile: path.join(handle.dataDir, 'logs', `${uuid}.log`),
  };
  for (const [name, content] of Object.entries(options.files ?? {})) fs.writeFileSync(path.join(server.volumeDir, name), content);
  return server;
}

/** The uid a server of this service runs as: SERVER_UID_RANGE's first + its row's uid_slot. */
export function serverUid(handle: ServiceHandle, uuid: string): number {
  const first = Number(/^(\d+)-/.exec(handle.env.SERVER_UID_RANGE ?? '')?.[1]);
  // The driver this Node has (node:sqlite on 22.16+ and 24, where better-sqlite3's addon is not built).
  const db = openSqliteConnection(path.join(handle.dataDir, 'quetzal.sqlite'), { readonly: true });
  try {
    const row = db.prepare('select uid_slot from servers where uuid = ?').get([uuid]) as { uid_slot: number } | undefined;
    if (!row || !Number.isSafeInteger(first)) throw new Error(`no uid slot for server ${uuid}`);
    return first + row.uid_slot;
  } finally {
    db.close();
  }
}

export interface ApiResponse {
  status: number;
  body: any;
}

export async function api(handle: ServiceHandle, method: string, url: string, body?: unknown): Promise<ApiResponse> {
  const headers: Record<string, string> = { authorization: `Bearer ${handle.token}`, accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`http://127.0.0.1:${handle.port}${url}`, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : JSON.parse(text) };
}

export async function power(
  handle: ServiceHandle,
  server: TestServer,
  signal: 'start' | 'stop' | 'restart' | 'kill',
): Promise<void> {
  const res = await api(handle, 'POST', `/api/client/servers/${server.identifier}/power`, { signal });
  expect(res.status, `power ${signal}: ${JSON.stringify(res.body)}`).toBe(204);
}

export interface Stats {
  current_state: string;
  is_suspended: boolean;
  resources: {
    memory_bytes: number;
    cpu_absolute: number;
    disk_bytes: number;
    network_rx_bytes: number;
    network_tx_bytes: number;
    uptime: number;
  };
}

export async function resources(handle: ServiceHandle, server: TestServer): Promise<Stats> {
  const res = await api(handle, 'GET', `/api/client/servers/${server.identifier}/resources`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body as { attributes: Stats }).attributes;
}

export async function state(handle: ServiceHandle, server: TestServer): Promise<string> {
  return (await resources(handle, server)).current_state;
}

export async function waitState(handle: ServiceHandle, server: TestServer, wanted: string, timeoutMs = 10_000): Promise<void> {
  let last = '';
  await waitFor(
    async () => (last = await state(handle, server)) === wanted,
    () => `${server.identifier} to be ${wanted} (last: ${last}); console log:\n${readLog(server)}`,
    timeoutMs,
  );
}

/** Polls `check` until it holds; fails with `what` after `timeoutMs`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string | (() => string),
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await sleep(50);
  }
}

/** The server's output as it printed it: conmon's records (`<time> stdout F text`) joined into lines. */
export function readLog(server: TestServer): string {
  let text: string;
  try {
    text = fs.readFileSync(server.logFile, 'utf8');
  } catch {
    return '';
  }
  const raw = text.split('\n');
  raw.pop();
  return joinConsoleRecords(raw, Number.MAX_SAFE_INTEGER)
    .map((line) => `${line}\n`)
    .join('');
}

export function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

// ---- what the host says -------------------------------------------------

export interface RuncContainer {
  id: string;
  pid: number;
  status: string;
}

async function runc(dataDir: string, args: string[]): Promise<string> {
  const { stdout } = await run(findRunc() ?? 'runc', ['--root', path.join(dataDir, 'run', 'runc'), ...args]);
  return stdout;
}

/** `runc --root $DATA_DIR/run/runc list --format json` (runc prints `null` for none). */
export async function runcList(dataDir: string): Promise<RuncContainer[]> {
  const list = JSON.parse((await runc(dataDir, ['list', '--format', 'json'])).trim() || 'null') as RuncContainer[] | null;
  return (list ?? []).map(({ id, pid, status }) => ({ id, pid, status }));
}

const hierarchy = readCgroupHierarchy();

/** A server's container's cgroup folder for `controller` (v1), or its one folder (v2). */
export function cgroupDir(server: TestServer, controller: string): string {
  if (hierarchy === null) throw new Error('no cgroup hierarchy is mounted');
  const root = hierarchy.version === 2 ? hierarchy.root : hierarchy.controllers.get(controller);
  if (root === undefined) throw new Error(`the ${controller} cgroup controller is not mounted`);
  return path.join(root, defaultCgroupsPath(server.uuid));
}

export function cgroupVersion(): 1 | 2 {
  if (hierarchy === null) throw new Error('no cgroup hierarchy is mounted');
  return hierarchy.version;
}

export function readCgroupFile(server: TestServer, controller: string, file: string): string {
  return fs.readFileSync(path.join(cgroupDir(server, controller), file), 'utf8');
}

/** "key value" lines (memory.stat, cpu.stat, pids.events). */
export function readKeyed(text: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [key, value] = line.split(' ');
    if (key && value !== undefined) values.set(key, Number(value));
  }
  return values;
}

/** Host pids in the container's cgroup; [] once the cgroup is gone. */
export function cgroupProcs(server: TestServer): number[] {
  try {
    return readCgroupFile(server, 'pids', 'cgroup.procs').split('\n').filter(Boolean).map(Number);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

export interface HostProcess {
  pid: number;
  uid: number;
  state: string;
  /** The arguments, NUL-separated in /proc, joined by spaces. */
  cmdline: string;
  /** utime + stime, in clock ticks. */
  cpuTicks: number;
  /** Session id. */
  session: number;
  /** The v1 pids controller's (or the v2) cgroup path. */
  cgroup: string;
}

/** Every live (not zombie) process of the host, as /proc shows it. */
export function hostProcesses(): HostProcess[] {
  const found: HostProcess[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      const status = fs.readFileSync(`/proc/${entry}/status`, 'utf8');
      const cgroups = fs.readFileSync(`/proc/${entry}/cgroup`, 'utf8').split('\n');
      const cgroup = cgroups.find((line) => /^\d+:pids:/.test(line) || line.startsWith('0::'))?.replace(/^\d+:[^:]*:/, '') ?? '';
      found.push({
        pid: Number(entry),
        uid: Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]),
        state: fields[0]!,
        cmdline: fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' '),
        cpuTicks: Number(fields[11]) + Number(fields[12]),
        session: Number(fields[3]),
        cgroup,
      });
    } catch {
      // Ended while we looked.
    }
  }
  return found;
}

/** Live processes in the server's container's cgroup, found by scanning /proc (not by asking the cgroup). */
export function containerProcesses(server: TestServer): HostProcess[] {
  const cgroup = defaultCgroupsPath(server.uuid);
  return hostProcesses().filter((proc) => proc.cgroup === cgroup);
}

/**
 * What is left of a server's container, described: runc's entry, processes
 * in its cgroup, the cgroup folders, its bundle. [] when nothing is.
 */
export async function containerLeftovers(handle: ServiceHandle, server: TestServer): Promise<string[]> {
  const left: string[] = [];
  const id = containerId(server.uuid);
  for (const container of await runcList(handle.dataDir))
    if (container.id === id) left.push(`runc lists ${id} (${container.status})`);
  for (const proc of containerProcesses(server)) left.push(`process ${proc.pid} (${proc.cmdline}) in its cgroup`);
  for (const controller of ['memory', 'cpu', 'cpuacct', 'pids']) {
    const dir = cgroupDir(server, controller);
    if (fs.existsSync(dir)) {
      const procs = fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').trim();
      left.push(`cgroup ${dir} (processes: ${procs === '' ? 'none' : procs.split('\n').join(' ')})`);
    }
    if (cgroupVersion() === 2) break;
  }
  const bundle = path.join(handle.dataDir, 'run', 'containers', server.uuid);
  if (fs.existsSync(bundle)) left.push(`bundle ${bundle}`);
  return left;
}

/** `/proc/loadavg`'s first figure above the core count: other work can keep a process below its quota. */
export function machineOverloaded(): boolean {
  return os.loadavg()[0]! > os.cpus().length;
}

/** Idle + iowait time of all cores, in clock ticks, from /proc/stat's first line. */
export function hostIdleTicks(): number {
  const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  return Number(fields[4]) + Number(fields[5]);
}

export const CLOCK_TICKS_PER_SECOND = 100;
