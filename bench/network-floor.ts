/**
 * Where a published port's round trip goes (issue 18, docs/PERFORMANCE.md
 * "Server networks: the round trip decomposed"): the same Python echo server
 * and client as bench/containment.ts, measured in one run, alternating, on
 * each step from the host's loopback to a confined server behind a published
 * port:
 *
 * - `loopback`: the server on the host, 127.0.0.1.
 * - `netns`: the server in a network namespace of ours (`ip netns exec`),
 *   reached at its inside address over a veth pair: nothing of ours but the
 *   pair (loopback's MTU, as server-network.ts makes it).
 * - `box` / `box, no seccomp` / `box, no cpu limit`: the server in a runc
 *   container made from the production spec (container-spec.ts) in that
 *   namespace, with its seccomp filter or without, with its CPU limit or
 *   without; reached at the inside address.
 * - then the same with the service's nftables table loaded (firewall-table.ts,
 *   rendered from a record that publishes each server's port): conntrack on
 *   every packet of the host, loopback included; `dnat` (the host's own
 *   address, DNATed, no masquerade) and `published` (127.0.0.1, DNATed and
 *   masqueraded: what bench/containment.ts measures).
 *
 * Each round loads or removes the table, then measures every step in a
 * rotated order; the figure per step is the median of its per-round
 * medians, each as a share of the same round's loopback. Needs root, runc,
 * ip, nft and python3; leaves nothing behind (namespace, table, containers,
 * folder), except after a SIGKILL: then `ip netns del qzb-…`, `nft delete
 * table ip qzbench_…`.
 *
 *   npx tsx bench/network-floor.ts [--rounds 20] [--pings 2000]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { containerSpec, type ContainerLimits } from '../src/daemon/local/container/container-spec.js';
import { writeBundle, bundlePathsIn } from '../src/daemon/local/container/bundle.js';
import { inspectHostLayout } from '../src/daemon/local/container/host-layout.js';
import { findRunc } from '../src/daemon/local/container/runc.js';
import { subnetFrom } from '../src/daemon/local/network/address-pool.js';
import { renderFirewallTable } from '../src/daemon/local/network/firewall-table.js';
import { findTool, runTool } from '../src/daemon/local/network/tools.js';
import { ipToNumber } from '../src/server-address-pool.js';
import { percentile, table } from './lib/stats.js';
import { ECHO_PY, medianRoundTripMs } from './lib/tcp-echo.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '20' },
    pings: { type: 'string', default: '2000' },
    /** Only the steps whose name matches this regular expression (loopback is always measured). */
    only: { type: 'string', default: '' },
  },
});
const ROUNDS = Number(values.rounds);
/** Syscalls timed per figure in the system-call step (a pipe write + read, and getppid). */
const SYSCALL_LOOPS = 200_000;
const PINGS = Number(values.pings);
/** The bench's server uid (bench/containment.ts's). */
const BOX_UID = 988;
const LIMITS: ContainerLimits = { memoryMiB: 1024, cpuPercent: 100, pids: 512 };

const ip = findTool('ip');
const nft = findTool('nft');
const runc = findRunc();
if (!ip || !nft || !runc || process.getuid?.() !== 0) {
  console.error('needs root, ip, nft and runc');
  process.exit(1);
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bench-netfloor-'));
fs.chmodSync(root, 0o755);
const tag = randomBytes(3).toString('hex');
const namespace = `qzb-${tag}`;
const tableName = `qzbench_${tag}`;
const runcRoot = path.join(root, 'runc');
/** A /30 outside the default SERVER_NETWORK (10.77/16), named as the service names its pairs, so the table's `qz*` rules match it. */
const subnet = subnetFrom(ipToNumber(`10.78.${randomInt(0, 256)}.${randomInt(0, 64) * 4}`));
const hostAddress = Object.values(os.networkInterfaces())
  .flat()
  .find((address) => address && address.family === 'IPv4' && !address.internal)?.address;

interface EchoServer {
  readonly name: string;
  readonly port: number;
  readonly dir: string;
  process?: ChildProcess;
  containerId?: string;
}

const servers: EchoServer[] = [];
/** The plain servers' cgroups, removed (after the servers) at the end. */
const cgroupDirs: string[] = [];

function newServerDir(name: string): EchoServer {
  const dir = path.join(root, `server-${servers.length}`);
  fs.mkdirSync(dir, { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'echo.py'), ECHO_PY, { mode: 0o644 });
  fs.chownSync(dir, BOX_UID, BOX_UID);
  const server: EchoServer = { name, port: 40_000 + servers.length * 7 + randomInt(0, 7), dir };
  servers.push(server);
  return server;
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** cgroup v1 settings a plain server is moved into: controller → file → value (an empty map: the cgroup alone). */
type CgroupSettings = Readonly<Record<string, Readonly<Record<string, string>>>>;

async function startPlain(
  name: string,
  inNamespace: boolean,
  cgroup?: { path: string; settings: CgroupSettings },
): Promise<EchoServer> {
  const server = newServerDir(name);
  const [file, args] = inNamespace ? [ip!, ['netns', 'exec', namespace, 'python3', 'echo.py']] : ['python3', ['echo.py']];
  server.process = spawn(file, args, {
    cwd: server.dir,
    stdio: 'ignore',
    env: { ...process.env, SERVER_PORT: String(server.port) },
  });
  for (const [controller, settings] of Object.entries(cgroup?.settings ?? {})) {
    const dir = path.join('/sys/fs/cgroup', controller, cgroup!.path);
    fs.mkdirSync(dir, { recursive: true });
    for (const [file, value] of Object.entries(settings)) fs.writeFileSync(path.join(dir, file), value);
    fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(server.process.pid));
    cgroupDirs.unshift(dir);
  }
  await until(() => fs.existsSync(path.join(server.dir, 'ready')), `${name} listens`);
  return server;
}

async function startBox(name: string, variant: { seccomp: boolean; cpuLimit: boolean }): Promise<EchoServer> {
  const server = newServerDir(name);
  const id = `qzbench-${tag}-${servers.length}`;
  const host = inspectHostLayout();
  const spec = containerSpec({
    serverUuid: randomUUID(),
    startup: 'exec python3 echo.py',
    volumeDir: server.dir,
    uid: BOX_UID,
    gid: BOX_UID,
    limits: variant.cpuLimit ? LIMITS : { ...LIMITS, cpuPercent: 0 },
    cgroupsPath: `/quetzal-bench/${id}`,
    hiddenPaths: [],
    host,
    extraEnv: { SERVER_PORT: String(server.port) },
    networkNamespace: `/run/netns/${namespace}`,
  });
  if (!variant.seccomp) delete (spec.linux as { seccomp?: unknown }).seccomp;
  const bundle = bundlePathsIn(path.join(root, 'bundles', id));
  await writeBundle(bundle, spec, host);
  server.containerId = id;
  server.process = spawn(runc!, ['--root', runcRoot, 'run', '--bundle', bundle.dir, id], { stdio: 'ignore' });
  await until(() => fs.existsSync(path.join(server.dir, 'ready')), `${name} listens`);
  return server;
}

async function stop(server: EchoServer): Promise<void> {
  const child = server.process;
  if (!child) return;
  const exited = new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)));
  if (server.containerId) {
    await runTool(runc!, ['--root', runcRoot, 'kill', server.containerId, 'KILL']).catch(() => undefined);
    await exited;
    await runTool(runc!, ['--root', runcRoot, 'delete', '--force', server.containerId]).catch(() => undefined);
  } else {
    child.kill('SIGKILL');
    await exited;
  }
}

async function makeNamespace(): Promise<void> {
  await runTool(ip!, ['netns', 'add', namespace]);
  await runTool(
    ip!,
    ['-batch', '-'],
    [
      `link add ${subnet.hostInterface} mtu 65535 type veth peer name eth0 mtu 65535 netns ${namespace}`,
      `link set ${subnet.hostInterface} addrgenmode none`,
      `addr add ${subnet.gateway}/30 dev ${subnet.hostInterface}`,
      `link set ${subnet.hostInterface} up`,
    ].join('\n'),
  );
  const conf = `/proc/sys/net/ipv4/conf/${subnet.hostInterface}`;
  fs.writeFileSync(`${conf}/route_localnet`, '1');
  fs.writeFileSync(`${conf}/rp_filter`, '1');
  await runTool(
    ip!,
    ['-n', namespace, '-batch', '-'],
    [
      `addr add ${subnet.inside}/30 dev eth0`,
      'link set eth0 addrgenmode none',
      'link set eth0 up',
      'link set lo up',
      `route add default via ${subnet.gateway}`,
    ].join('\n'),
  );
}

function loadTable(published: readonly EchoServer[]): Promise<string> {
  const record = {
    serverUuid: randomUUID(),
    namespace,
    hostInterface: subnet.hostInterface,
    gateway: subnet.gateway,
    inside: subnet.inside,
    allocations: published.map((server) => ({ ip: '0.0.0.0', port: server.port })),
  };
  return runTool(nft!, ['-f', '-'], renderFirewallTable(tableName, [record]));
}

const removeTable = () => runTool(nft!, ['-f', '-'], renderFirewallTable(tableName, []));

/** A step: what is measured, and how it is reached. */
interface Step {
  readonly name: string;
  readonly host: string;
  readonly server: EchoServer;
  readonly withTable: boolean;
}

/** What a hot system call costs in each box and on the host: the seccomp filter's share, without the network's noise. */
const SYSCALL_PY = `
import os, time
r, w = os.pipe()
n = ${SYSCALL_LOOPS}
t = time.perf_counter_ns()
for _ in range(n): os.write(w, b'x'); os.read(r, 1)
rw = (time.perf_counter_ns() - t) / n
t = time.perf_counter_ns()
for _ in range(n): os.getppid()
print(f"{rw:.0f} {(time.perf_counter_ns() - t) / n:.0f}")
`;

async function syscallCosts(boxes: readonly EchoServer[]): Promise<void> {
  const figures = new Map<string, { rw: number[]; getppid: number[] }>();
  for (let round = 0; round < 5; round++) {
    for (const server of [undefined, ...boxes]) {
      const output = server
        ? await runTool(runc!, ['--root', runcRoot, 'exec', server.containerId!, 'python3', '-c', SYSCALL_PY])
        : await runTool('python3', ['-c', SYSCALL_PY]);
      const [rw, getppid] = output.trim().split(' ').map(Number);
      const name = server?.name ?? 'host';
      const entry = figures.get(name) ?? { rw: [], getppid: [] };
      entry.rw.push(rw!);
      entry.getppid.push(getppid!);
      figures.set(name, entry);
    }
  }
  const median = (list: readonly number[]) =>
    percentile(
      [...list].sort((a, b) => a - b),
      50,
    );
  console.log(`System calls from Python, ${SYSCALL_LOOPS} each, median of 5 (ns)\n`);
  console.log(
    table(
      ['where', 'pipe write + read', 'getppid'],
      [...figures].map(([name, entry]) => [name, median(entry.rw).toFixed(0), median(entry.getppid).toFixed(0)]),
    ),
  );
  console.log('');
}

try {
  await makeNamespace();
  const onHost = await startPlain('host', false);
  const inNamespace = await startPlain('netns', true);
  const inCpuCgroup = await startPlain('netns, cpu cgroup', true, {
    path: `quetzal-bench/plain-quota`,
    settings: { cpu: { 'cpu.cfs_quota_us': '100000' } },
  });
  const inCpuCgroupNoQuota = await startPlain('netns, cpu cgroup, no quota', true, {
    path: `quetzal-bench/plain-no-quota`,
    settings: { cpu: {} },
  });
  const inShallowCpuCgroup = await startPlain('netns, cpu cgroup at the root, no quota', true, {
    path: `qzbench-${tag}`,
    settings: { cpu: {} },
  });
  const inHeavyCgroup = await startPlain('netns, cpu cgroup, shares 10240', true, {
    path: `quetzal-bench/plain-heavy`,
    settings: { cpu: { 'cpu.shares': '10240' } },
  });
  const inLightCgroup = await startPlain('netns, cpu cgroup, shares 128', true, {
    path: `quetzal-bench/plain-light`,
    settings: { cpu: { 'cpu.shares': '128' } },
  });
  const inMemoryCgroup = await startPlain('netns, memory cgroup', true, {
    path: `quetzal-bench/plain-memory`,
    settings: { memory: { 'memory.limit_in_bytes': String(1 << 30) } },
  });
  const box = await startBox('box', { seccomp: true, cpuLimit: true });
  const boxNoSeccomp = await startBox('box, no seccomp', { seccomp: false, cpuLimit: true });
  const boxNoCpuLimit = await startBox('box, no cpu limit', { seccomp: true, cpuLimit: false });
  const inside = [
    inNamespace,
    inCpuCgroup,
    inCpuCgroupNoQuota,
    inShallowCpuCgroup,
    inHeavyCgroup,
    inLightCgroup,
    inMemoryCgroup,
    box,
    boxNoSeccomp,
    boxNoCpuLimit,
  ];
  const direct = (withTable: boolean): Step[] => [
    { name: 'loopback', host: '127.0.0.1', server: onHost, withTable },
    ...inside.map((server) => ({ name: `${server.name}, inside address`, host: subnet.inside, server, withTable })),
  ];
  const allSteps: Step[] = [
    ...direct(false),
    ...direct(true),
    ...(hostAddress
      ? [{ name: `netns, dnat from ${hostAddress}`, host: hostAddress, server: inNamespace, withTable: true }]
      : []),
    ...inside.map((server) => ({ name: `${server.name}, published 127.0.0.1`, host: '127.0.0.1', server, withTable: true })),
  ];
  await syscallCosts([box, boxNoSeccomp, boxNoCpuLimit]);
  const only = new RegExp(values.only);
  const steps = allSteps.filter((step) => step.name === 'loopback' || only.test(step.name));
  const key = (step: Step) => `${step.withTable ? 'table' : 'no table'}: ${step.name}`;
  const medians = new Map<string, number[]>();
  const shares = new Map<string, number[]>();
  for (let round = 0; round < ROUNDS; round++) {
    const phases = round % 2 === 0 ? [false, true] : [true, false];
    for (const withTable of phases) {
      const phase = steps.filter((step) => step.withTable === withTable);
      if (phase.length < 2) continue;
      if (withTable) await loadTable(inside);
      else await removeTable();
      const rotated = [...phase.slice(round % phase.length), ...phase.slice(0, round % phase.length)];
      const figures = new Map<Step, number>();
      for (const step of rotated) figures.set(step, await medianRoundTripMs(step.host, step.server.port, PINGS));
      const loopback = figures.get(phase[0]!)!;
      for (const [step, ms] of figures) {
        medians.set(key(step), [...(medians.get(key(step)) ?? []), ms]);
        shares.set(key(step), [...(shares.get(key(step)) ?? []), loopback / ms]);
      }
    }
  }
  const median = (list: readonly number[]) =>
    percentile(
      [...list].sort((a, b) => a - b),
      50,
    );
  console.log(
    `TCP round trip from 127.0.0.1's side, ${PINGS} pings a figure, ${ROUNDS} rounds (median of the rounds' medians)\n`,
  );
  console.log(
    table(
      ['step', 'round trip (µs)', 'loopback / step'],
      steps.map((step) => [
        key(step),
        (median(medians.get(key(step))!) * 1000).toFixed(1),
        `${(median(shares.get(key(step))!) * 100).toFixed(0)}%`,
      ]),
    ),
  );
  console.log(
    JSON.stringify({
      bench: 'network-floor',
      rounds: ROUNDS,
      pings: PINGS,
      microseconds: Object.fromEntries([...medians].map(([name, list]) => [name, Number((median(list) * 1000).toFixed(1))])),
    }),
  );
} finally {
  // Each step whatever the others did: the folder is removed even when a cgroup is still busy.
  for (const server of servers)
    await stop(server).catch((err: unknown) => console.error(`stopping ${server.name}: ${String(err)}`));
  await removeTable().catch(() => undefined);
  await runTool(ip, ['netns', 'del', namespace]).catch(() => undefined);
  // The plain servers' cgroups, then their parent (runc removed the boxes'; cgroup v1: one per hierarchy).
  const parents = fs.readdirSync('/sys/fs/cgroup').map((hierarchy) => path.join('/sys/fs/cgroup', hierarchy, 'quetzal-bench'));
  for (const dir of [...cgroupDirs, ...parents]) {
    try {
      fs.rmdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') console.error(`could not remove the cgroup ${dir}: ${String(err)}`);
    }
  }
  fs.rmSync(root, { recursive: true, force: true });
}
