/**
 * The OCI runtime spec (runc's config.json) for one server's container: what
 * its process may see and use (docs/reference/containment.md). Pure: what it needs to know of the
 * host (which system folders are real folders, which are links, where the
 * hidden paths are) comes in as data; host-layout.ts finds it out.
 */
import path from 'node:path';
import { seccompProfile } from './seccomp-profile.js';

/** Where the volume appears inside the container: Pterodactyl's layout, which eggs' startup commands assume. */
const CONTAINER_HOME = '/home/container';
/** Wings' default for a server's /tmp (its `tmpfs_size`). */
const DEFAULT_TMP_MIB = 100;
const CPU_PERIOD_US = 100_000;
/**
 * The container's first process: runs the startup command as its child (so
 * the server gets ordinary signal handling, not a PID namespace init's) and
 * exits with its status, which conmon records (container-exit.ts). It holds
 * nothing but the pipes conmon gave it as 0, 1 and 2 (docs/reference/containment.md: no host file
 * is open in the box). As PID 1 it ignores SIGTERM (no handler), so stop
 * signals go to every process (`signalRecorded`) and it outlives the server
 * long enough to pass the status on.
 *
 * When the startup command was ended by a stop signal (SIGHUP, SIGINT,
 * SIGTERM: 129, 130, 143), whatever it started was asked to stop too and gets
 * its time to finish (a server saving its world while its shell is already
 * gone): the first process stays while any other process is left (its own
 * /proc lists only the container's processes; waiting for `sleep` also reaps
 * the orphans it inherits), bounded by the service's grace timer, which
 * SIGKILLs it. Ended any other way, the first process ends at once, and the
 * kernel ends everything left in the container with it. The same rules as a
 * plain process group's (supervisor.ts, `afterExit`).
 */
export const INIT_SCRIPT =
  'sh -c "$1"; s=$?; ' + 'case $s in 129|130|143) while set -- /proc/[0-9]*; [ $# -gt 1 ]; do sleep 0.1; done ;; esac; exit $s';

/** Game servers (Java above all) keep many files and sockets open; 1024 is too few for a busy one. */
const NOFILE_LIMIT = 65_536;

const STANDARD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** Passed through from the service's environment when set: a server's language and clock are the host's. */
const PASSED_ENV = ['LANG', 'LC_ALL', 'LC_CTYPE', 'TZ'];

/** Docker's defaults: kernel interfaces that leak host details or let a process poke at the host. */
const MASKED_PATHS = [
  '/proc/acpi',
  '/proc/asound',
  '/proc/interrupts',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/sys/devices/virtual/powercap',
  '/sys/firmware',
];
const READONLY_PATHS = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

/**
 * A host folder the container sees read-only at the same path: a real folder
 * is bind-mounted; a link (`/bin -> usr/bin` on merged-/usr systems) is
 * recreated as the same link in the root, so it resolves into the bound /usr
 * exactly as on the host.
 */
export type SystemDir =
  { readonly path: string; readonly kind: 'dir' } | { readonly path: string; readonly kind: 'symlink'; readonly target: string };

export interface HostLayout {
  readonly systemDirs: readonly SystemDir[];
  /**
   * Host files bound read-only at their own path because a system folder only
   * links to them (an /etc/resolv.conf that points into /run, which is not
   * bound): without them the link would dangle and DNS would fail.
   */
  readonly extraFiles: readonly string[];
  /** Whether the memory controller can limit swap (v1 memsw, v2 memory.swap.max). */
  readonly swapLimit: boolean;
  /**
   * The service's own hard limit on open files: without CAP_SYS_RESOURCE
   * (which a service in a container may lack) runc cannot raise it.
   */
  readonly nofileHardLimit: number;
}

export interface ContainerLimits {
  /** 0 = unlimited. */
  readonly memoryMiB: number;
  /** Percent of one core (Pterodactyl's unit: 100 = one core, 250 = two and a half); 0 = unlimited. */
  readonly cpuPercent: number;
  /** 0 = unlimited. */
  readonly pids: number;
}

export interface ContainerOptions {
  readonly serverUuid: string;
  readonly startup: string;
  /** The server's volume on the host (a real path: no links). */
  readonly volumeDir: string;
  readonly uid: number;
  readonly gid: number;
  readonly limits: ContainerLimits;
  /** Where the container's cgroup goes, from the root of each hierarchy; predictable so stats can find it. */
  readonly cgroupsPath: string;
  /**
   * Host paths (real paths) the process must never see: DATA_DIR, the `.env`
   * folder. Only a path inside a bound system folder could show; such a path
   * is masked (an empty read-only tmpfs over a folder, /dev/null over a file).
   */
  readonly hiddenPaths: readonly string[];
  readonly host: HostLayout;
  /** The service's environment, for PASSED_ENV. */
  readonly serviceEnv?: Readonly<Record<string, string | undefined>>;
  /** More variables for the process (an egg's); they cannot replace HOME, PATH, USER or P_SERVER_UUID. */
  readonly extraEnv?: Readonly<Record<string, string>>;
  readonly tmpMiB?: number;
  /** The server's own network namespace (`/run/netns/...`, docs/reference/network-and-allocations.md); absent = the host's network. */
  readonly networkNamespace?: string;
  /** A resolv.conf bound over the container's /etc/resolv.conf (one its own network can reach). */
  readonly resolvConf?: string;
  /**
   * The image's root file system (docs/reference/eggs-and-installs.md: an absolute path, shared read-only
   * by every box on that image, its mount points made at build time); absent =
   * `host`: the bundle's empty `rootfs/` with the host's system folders bound in.
   */
  readonly imageRootfs?: string;
}

/** Container ids are runc's `[\w+.-]`; a uuid (or any safe name) becomes `quetzal-<uuid>`. */
export function containerId(serverUuid: string): string {
  if (!/^[A-Za-z0-9][\w.+-]{0,100}$/.test(serverUuid))
    throw new Error(`not a usable container name: ${JSON.stringify(serverUuid)}`);
  return `quetzal-${serverUuid}`;
}

export function defaultCgroupsPath(serverUuid: string): string {
  return `/quetzal/${containerId(serverUuid)}`;
}

export function containerSpec(options: ContainerOptions): Record<string, unknown> {
  const { limits, host } = options;
  assertValidLimits(limits);
  if (!path.isAbsolute(options.volumeDir)) throw new Error(`the volume folder must be an absolute path: ${options.volumeDir}`);
  const nofile = Math.min(NOFILE_LIMIT, host.nofileHardLimit);
  const image = options.imageRootfs;
  if (image !== undefined && !path.isAbsolute(image)) throw new Error(`an image's root must be an absolute path: ${image}`);
  return {
    ociVersion: '1.0.2',
    // Read-only either way: runc remounts it so in the box's own mount namespace; the image's folder stays as it is.
    root: { path: image ?? 'rootfs', readonly: true },
    hostname: options.serverUuid.slice(0, 63),
    process: {
      terminal: false,
      user: { uid: options.uid, gid: options.gid, additionalGids: [] },
      args: ['/bin/sh', '-c', INIT_SCRIPT, 'quetzal-init', options.startup],
      env: containerEnv(options),
      cwd: CONTAINER_HOME,
      // No capability at all: the process is an ordinary user in its own box.
      capabilities: { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] },
      rlimits: [
        { type: 'RLIMIT_NOFILE', hard: nofile, soft: nofile },
        // A crashing server must not fill its volume (and its disk limit) with core files.
        { type: 'RLIMIT_CORE', hard: 0, soft: 0 },
      ],
      noNewPrivileges: true,
    },
    mounts: [
      ...kernelMounts(options.tmpMiB ?? DEFAULT_TMP_MIB),
      // On an image nothing of the host's system is bound in, so no host path can show: nothing to mask either.
      ...(image === undefined ? systemMounts(host) : []),
      ...resolverMount(options.resolvConf),
      volumeMount(options.volumeDir),
    ],
    linux: {
      namespaces: [
        { type: 'pid' },
        { type: 'ipc' },
        { type: 'uts' },
        { type: 'mount' },
        { type: 'cgroup' },
        // Made (veth, addresses, published ports) before the container starts, by network/server-network.ts.
        ...(options.networkNamespace !== undefined ? [{ type: 'network', path: options.networkNamespace }] : []),
      ],
      cgroupsPath: options.cgroupsPath,
      resources: resources(limits, host.swapLimit),
      maskedPaths: [...MASKED_PATHS, ...(image === undefined ? maskedHostPaths(options.hiddenPaths, host.systemDirs) : [])],
      readonlyPaths: READONLY_PATHS,
      // An allowlist of system calls (seccomp-profile.ts): no new namespaces, ptrace, pidfd_getfd, keyctl, bpf, mount...
      seccomp: seccompProfile(),
    },
  };
}

function assertValidLimits(limits: ContainerLimits): void {
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 0)
      throw new Error(`limit ${name} must be a whole number ≥ 0, not ${String(value)}`);
  }
}

function containerEnv(options: ContainerOptions): string[] {
  const env: Record<string, string> = {};
  for (const name of PASSED_ENV) {
    const value = options.serviceEnv?.[name];
    if (value !== undefined) env[name] = value;
  }
  Object.assign(env, options.extraEnv, {
    HOME: CONTAINER_HOME,
    PATH: STANDARD_PATH,
    USER: 'container',
    LOGNAME: 'container',
    SHELL: '/bin/sh',
    TMPDIR: '/tmp',
    TERM: 'xterm',
    P_SERVER_UUID: options.serverUuid,
  });
  return Object.entries(env).map(([name, value]) => `${name}=${value}`);
}

/** What runc's own default spec mounts, plus a size-capped /tmp of the server's own. */
function kernelMounts(tmpMiB: number): object[] {
  return [
    { destination: '/proc', type: 'proc', source: 'proc' },
    { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'] },
    {
      destination: '/dev/pts',
      type: 'devpts',
      source: 'devpts',
      options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', 'gid=5'],
    },
    { destination: '/dev/shm', type: 'tmpfs', source: 'shm', options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k'] },
    { destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
    { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
    // The container's own cgroup, read-only: the JVM and others size themselves from its limits.
    { destination: '/sys/fs/cgroup', type: 'cgroup', source: 'cgroup', options: ['nosuid', 'noexec', 'nodev', 'relatime', 'ro'] },
    { destination: '/tmp', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', 'mode=1777', `size=${tmpMiB}m`] },
  ];
}

/**
 * Not recursive (`bind`, not `rbind`): a mount below /usr or /etc (which could
 * be DATA_DIR's own disk) stays out, and `ro` then holds for all of it.
 */
function systemMounts(host: HostLayout): object[] {
  const readOnlyBind = ['bind', 'ro', 'nosuid', 'nodev'];
  const dirs = host.systemDirs
    .filter((dir) => dir.kind === 'dir')
    .map((dir) => ({ destination: dir.path, type: 'bind', source: dir.path, options: readOnlyBind }));
  const files = host.extraFiles.map((file) => ({ destination: file, type: 'bind', source: file, options: readOnlyBind }));
  return [...dirs, ...files];
}

/** After the system binds: over /etc/resolv.conf (or, through its link, the file it names). */
function resolverMount(resolvConf: string | undefined): object[] {
  if (resolvConf === undefined) return [];
  return [
    { destination: '/etc/resolv.conf', type: 'bind', source: resolvConf, options: ['bind', 'ro', 'nosuid', 'nodev', 'noexec'] },
  ];
}

function volumeMount(volumeDir: string): object {
  return { destination: CONTAINER_HOME, type: 'bind', source: volumeDir, options: ['bind', 'rw', 'nosuid', 'nodev'] };
}

function resources(limits: ContainerLimits, swapLimit: boolean): Record<string, unknown> {
  // Deny every device but those runc adds itself (null, zero, full, tty, random, urandom, pts).
  const result: Record<string, unknown> = { devices: [{ allow: false, access: 'rwm' }] };
  if (limits.memoryMiB > 0) {
    const bytes = limits.memoryMiB * 1024 * 1024;
    // OCI's `swap` is memory + swap: equal to the limit means no swap, so swapping cannot get round it.
    result.memory = swapLimit ? { limit: bytes, swap: bytes } : { limit: bytes };
  }
  if (limits.cpuPercent > 0) result.cpu = { quota: Math.round((limits.cpuPercent * CPU_PERIOD_US) / 100), period: CPU_PERIOD_US };
  if (limits.pids > 0) result.pids = { limit: limits.pids };
  return result;
}

/**
 * The container paths under which a hidden host path would show: only bound
 * system folders show host files. A hidden path that holds a system folder
 * (DATA_DIR=/usr) cannot be hidden without hiding the system: refused.
 */
export function maskedHostPaths(hiddenPaths: readonly string[], systemDirs: readonly SystemDir[]): string[] {
  const masked: string[] = [];
  for (const hidden of hiddenPaths) {
    if (!path.isAbsolute(hidden)) throw new Error(`hidden paths must be absolute: ${hidden}`);
    for (const dir of systemDirs) {
      if (dir.kind !== 'dir') continue;
      if (isWithin(dir.path, hidden))
        throw new Error(`${hidden} holds the system folder ${dir.path}: it cannot be hidden from a container`);
      if (isWithin(hidden, dir.path)) masked.push(path.resolve(hidden));
    }
  }
  return [...new Set(masked)];
}

/** Whether `inner` is `outer` or lies below it. */
function isWithin(inner: string, outer: string): boolean {
  const relative = path.relative(outer, inner);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}
