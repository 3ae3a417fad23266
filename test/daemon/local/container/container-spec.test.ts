/**
 * The container spec as data (container-spec.ts): each rule of docs/reference/containment.md that
 * the bundle carries, and the host facts it is built from (host-layout.ts,
 * cgroup-hierarchy.ts). The real containers are in confinement.test.ts and
 * limits.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundlePaths, writeBundle } from '../../../../src/daemon/local/container/bundle.js';
import { readCgroupHierarchy } from '../../../../src/daemon/local/container/cgroup-hierarchy.js';
import { cpuAbsolute, readCgroupStats } from '../../../../src/daemon/local/container/cgroup-stats.js';
import {
  containerId,
  containerSpec,
  INIT_SCRIPT,
  maskedHostPaths,
  type ContainerOptions,
  type HostLayout,
} from '../../../../src/daemon/local/container/container-spec.js';
import { detectContainment, cgroupProblem } from '../../../../src/daemon/local/container/containment-check.js';
import { inspectHostLayout } from '../../../../src/daemon/local/container/host-layout.js';

const MERGED_USR: HostLayout = {
  systemDirs: [
    { path: '/usr', kind: 'dir' },
    { path: '/bin', kind: 'symlink', target: 'usr/bin' },
    { path: '/lib', kind: 'symlink', target: 'usr/lib' },
    { path: '/etc', kind: 'dir' },
  ],
  extraFiles: ['/run/systemd/resolve/stub-resolv.conf'],
  swapLimit: true,
  nofileHardLimit: 1_048_576,
};

function options(overrides: Partial<ContainerOptions> = {}): ContainerOptions {
  return {
    serverUuid: '0b1c2d3e-aaaa-bbbb-cccc-1234567890ab',
    startup: 'java -jar server.jar',
    volumeDir: '/srv/quetzal/volumes/0b1c2d3e',
    uid: 988,
    gid: 988,
    limits: { memoryMiB: 1024, cpuPercent: 150, pids: 512 },
    cgroupsPath: '/quetzal/quetzal-0b1c2d3e',
    hiddenPaths: ['/srv/quetzal'],
    host: MERGED_USR,
    serviceEnv: { LANG: 'C.UTF-8', DATABASE_URL: 'postgres://secret', PATH: '/root/bin' },
    ...overrides,
  };
}

type Spec = {
  process: {
    args: string[];
    env: string[];
    cwd: string;
    user: object;
    capabilities: Record<string, unknown[]>;
    noNewPrivileges: boolean;
    rlimits: { type: string; hard: number }[];
  };
  root: { readonly: boolean };
  mounts: { destination: string; type: string; source: string; options?: string[] }[];
  linux: { namespaces: { type: string }[]; resources: Record<string, unknown>; maskedPaths: string[]; cgroupsPath: string };
};

const spec = (overrides?: Partial<ContainerOptions>) => containerSpec(options(overrides)) as unknown as Spec;

describe('containerSpec', () => {
  it('runs the startup command with sh -c in /home/container as the server uid, with no privilege', () => {
    const { process: proc, root } = spec();
    expect(proc.args).toEqual(['/bin/sh', '-c', INIT_SCRIPT, 'quetzal-init', 'java -jar server.jar']);
    expect(proc.cwd).toBe('/home/container');
    expect(proc.user).toEqual({ uid: 988, gid: 988, additionalGids: [] });
    expect(proc.noNewPrivileges).toBe(true);
    for (const set of Object.values(proc.capabilities)) expect(set).toEqual([]);
    expect(root.readonly).toBe(true);
  });

  it("gives a minimal environment: none of the service's secrets, its locale, and the server's own variables", () => {
    const env = spec({ extraEnv: { SERVER_MEMORY: '1024', HOME: '/root' } }).process.env;
    expect(env).toContain('HOME=/home/container');
    expect(env).toContain('P_SERVER_UUID=0b1c2d3e-aaaa-bbbb-cccc-1234567890ab');
    expect(env).toContain('LANG=C.UTF-8');
    expect(env).toContain('SERVER_MEMORY=1024');
    expect(env.join('\n')).not.toMatch(/DATABASE_URL|\/root/);
  });

  it('binds the system read-only, the volume read-write, and recreates merged-/usr links', () => {
    const mounts = spec().mounts;
    const byDestination = new Map(mounts.map((mount) => [mount.destination, mount]));
    for (const dir of ['/usr', '/etc']) expect(byDestination.get(dir)?.options).toEqual(['bind', 'ro', 'nosuid', 'nodev']);
    expect(byDestination.has('/bin')).toBe(false);
    expect(byDestination.get('/run/systemd/resolve/stub-resolv.conf')?.options).toContain('ro');
    expect(byDestination.get('/home/container')).toEqual({
      destination: '/home/container',
      type: 'bind',
      source: '/srv/quetzal/volumes/0b1c2d3e',
      options: ['bind', 'rw', 'nosuid', 'nodev'],
    });
    expect(byDestination.get('/tmp')?.options).toContain('size=100m');
    expect(byDestination.get('/sys')?.options).toContain('ro');
    // The volume is the only bind of anything below DATA_DIR.
    expect(mounts.filter((mount) => mount.source.startsWith('/srv/quetzal')).map((mount) => mount.destination)).toEqual([
      '/home/container',
    ]);
  });

  it('uses its own pid, ipc, uts, mount and cgroup namespaces and the host network', () => {
    const types = spec().linux.namespaces.map((namespace) => namespace.type);
    expect(types).toEqual(['pid', 'ipc', 'uts', 'mount', 'cgroup']);
    expect(types).not.toContain('network');
  });

  it('turns the limits into cgroup resources, swap included, 0 meaning none', () => {
    expect(spec().linux.resources).toMatchObject({
      memory: { limit: 1024 * 1024 * 1024, swap: 1024 * 1024 * 1024 },
      cpu: { quota: 150_000, period: 100_000 },
      pids: { limit: 512 },
    });
    const unlimited = spec({ limits: { memoryMiB: 0, cpuPercent: 0, pids: 0 } }).linux.resources;
    expect(Object.keys(unlimited)).toEqual(['devices']);
    const noSwapAccounting = spec({ host: { ...MERGED_USR, swapLimit: false } }).linux.resources;
    expect(noSwapAccounting.memory).toEqual({ limit: 1024 * 1024 * 1024 });
    expect(() => spec({ limits: { memoryMiB: -1, cpuPercent: 0, pids: 0 } })).toThrow(/memoryMiB/);
    expect(() => spec({ limits: { memoryMiB: 0, cpuPercent: 12.5, pids: 0 } })).toThrow(/cpuPercent/);
  });

  it("caps open files at the service's own hard limit, and allows no core files", () => {
    const limits = (host: HostLayout) => spec({ host }).process.rlimits;
    expect(limits(MERGED_USR)).toEqual([
      { type: 'RLIMIT_NOFILE', hard: 65_536, soft: 65_536 },
      { type: 'RLIMIT_CORE', hard: 0, soft: 0 },
    ]);
    expect(limits({ ...MERGED_USR, nofileHardLimit: 20_000 })[0]).toMatchObject({ hard: 20_000 });
  });

  it("masks Docker's kernel paths and a hidden path that lies in a bound folder", () => {
    expect(spec().linux.maskedPaths).toContain('/proc/kcore');
    expect(spec().linux.maskedPaths).not.toContain('/srv/quetzal');
    expect(spec({ hiddenPaths: ['/etc/quetzal'] }).linux.maskedPaths).toContain('/etc/quetzal');
    expect(maskedHostPaths(['/usr/local/quetzal/', '/var/lib/x'], MERGED_USR.systemDirs)).toEqual(['/usr/local/quetzal']);
    expect(() => maskedHostPaths(['/'], MERGED_USR.systemDirs)).toThrow(/cannot be hidden/);
    expect(() => maskedHostPaths(['relative'], MERGED_USR.systemDirs)).toThrow(/absolute/);
  });

  it('derives container ids from server uuids and refuses names runc would not take', () => {
    expect(containerId('0b1c2d3e-aaaa')).toBe('quetzal-0b1c2d3e-aaaa');
    for (const bad of ['../x', 'a/b', '', '-x', 'a b']) expect(() => containerId(bad)).toThrow(/not a usable/);
    expect(() => spec({ volumeDir: 'relative/volume' })).toThrow(/absolute/);
  });
});

describe('the bundle on disk', () => {
  it('writes config.json and a root of empty folders and the system links', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-bundle-'));
    try {
      const paths = bundlePaths(dir, 'server-1');
      await writeBundle(paths, { ociVersion: '1.0.2' }, MERGED_USR);
      await writeBundle(paths, { ociVersion: '1.0.2', again: true }, MERGED_USR);
      expect(JSON.parse(fs.readFileSync(paths.config, 'utf8'))).toEqual({ ociVersion: '1.0.2', again: true });
      expect(fs.readdirSync(paths.rootfs).sort()).toEqual(['bin', 'lib']);
      expect(fs.readlinkSync(path.join(paths.rootfs, 'bin'))).toBe('usr/bin');
      expect(fs.statSync(paths.rootfs).mode & 0o777).toBe(0o755);
      expect(fs.statSync(paths.dir).mode & 0o777).toBe(0o700);
      expect(fs.readdirSync(paths.dir).sort()).toEqual(['config.json', 'rootfs']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the host', () => {
  it('finds this machine able to confine, quickly', async () => {
    const started = performance.now();
    const check = await detectContainment();
    expect(performance.now() - started).toBeLessThan(200);
    expect(check).toMatchObject({ available: true });
  });

  it('reads v1, v2 and hybrid cgroup layouts from mountinfo', () => {
    const v1 = [
      '30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct',
      '31 25 0:27 / /sys/fs/cgroup/memory rw,relatime shared:10 - cgroup cgroup rw,memory',
      '32 25 0:28 / /sys/fs/cgroup/pids rw,relatime shared:11 - cgroup cgroup rw,pids',
      '33 25 0:29 / /sys/fs/cgroup/unified rw,relatime shared:12 - cgroup2 cgroup2 rw',
    ].join('\n');
    const hybrid = readCgroupHierarchy(v1);
    expect(hybrid).toEqual({
      version: 1,
      controllers: new Map([
        ['cpu', '/sys/fs/cgroup/cpu,cpuacct'],
        ['cpuacct', '/sys/fs/cgroup/cpu,cpuacct'],
        ['memory', '/sys/fs/cgroup/memory'],
        ['pids', '/sys/fs/cgroup/pids'],
      ]),
    });
    const v2 = '35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate';
    expect(readCgroupHierarchy(v2)).toEqual({ version: 2, root: '/sys/fs/cgroup' });
    expect(readCgroupHierarchy('')).toBeNull();
    expect(cgroupProblem({ version: 1, controllers: new Map([['memory', '/sys/fs/cgroup/memory']]) })).toMatch(
      /cpu cgroup controller is not mounted/,
    );
  });

  it("knows this machine's layout: merged /usr links, swap accounting", () => {
    const host = inspectHostLayout();
    const usr = host.systemDirs.find((dir) => dir.path === '/usr');
    expect(usr?.kind).toBe('dir');
    for (const dir of host.systemDirs) {
      if (dir.kind === 'symlink') expect(fs.readlinkSync(dir.path)).toBe(dir.target);
    }
    expect(host.nofileHardLimit).toBeGreaterThan(0);
  });
});

describe('cgroup v2 figures', () => {
  // This machine runs cgroup v1 (limits.test.ts reads real v1 cgroups); v2's files, as the kernel writes them.
  it('reads memory without inactive files, CPU in nanoseconds, pids and OOM kills', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-cgroup2-'));
    try {
      const dir = path.join(root, 'quetzal', 'quetzal-x');
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'memory.current'), '104857600\n');
      fs.writeFileSync(
        path.join(dir, 'memory.stat'),
        'anon 83886080\nfile 20971520\ninactive_file 10485760\nactive_file 10485760\n',
      );
      fs.writeFileSync(path.join(dir, 'memory.events'), 'low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n');
      fs.writeFileSync(path.join(dir, 'cpu.stat'), 'usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n');
      fs.writeFileSync(path.join(dir, 'pids.current'), '7\n');
      expect(readCgroupStats({ version: 2, root }, '/quetzal/quetzal-x')).toEqual({
        memoryBytes: 94371840,
        cpuUsageNs: 1_500_000_000,
        pids: 7,
        oomKills: 2,
      });
      expect(readCgroupStats({ version: 2, root }, '/quetzal/gone')).toBeNull();
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('cpuAbsolute', () => {
  it("is the percent of one core used between two samples (Pterodactyl's cpu_absolute)", () => {
    expect(cpuAbsolute({ cpuUsageNs: 0, atNs: 0 }, { cpuUsageNs: 1e9, atNs: 2e9 })).toBe(50);
    expect(cpuAbsolute({ cpuUsageNs: 0, atNs: 0 }, { cpuUsageNs: 3e9, atNs: 2e9 })).toBe(150);
    expect(cpuAbsolute({ cpuUsageNs: 5e9, atNs: 0 }, { cpuUsageNs: 1e9, atNs: 2e9 })).toBe(0);
    expect(cpuAbsolute({ cpuUsageNs: 0, atNs: 5 }, { cpuUsageNs: 1e9, atNs: 5 })).toBe(0);
  });
});
