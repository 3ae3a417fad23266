/**
 * The installer box (docs/reference/eggs-and-installs.md): an install script in a runc container of its
 * own, `qzinstall-<uuid>` (not `quetzal-<uuid>`: the server's container and
 * the launcher's sweep of `quetzal-*` never see it). Its spec is the
 * server's (container-spec.ts: no capability, the seccomp allowlist, the
 * server's uid, limits and cgroup rules, a tmpfs /tmp, the host's system
 * folders or the image read-only, hidden paths masked) with three changes:
 * the volume at `/mnt/server` (writable; the working folder and HOME), the
 * script read-only at `/tmp/.quetzal-install/install.sh`, and the entrypoint as its
 * first process. Its network is the server's own namespace (docs/reference/network-and-allocations.md),
 * attached for the install with no published port, detached after.
 *
 * No user namespace: the script runs as the server's uid, as the server
 * itself will, so every file it writes is the server's and nothing in the box
 * is root, even inside (docs/INSTALLS.md: scripts that `apt-get install`
 * fail at that line; the image must hold what the script needs).
 *
 * Run with `runc run` (not conmon): the box's stdout and stderr are pipes of
 * the service, read line by line. A SIGKILL of the service leaves the box
 * running with its pipes' other end gone: its next write to them fails
 * (SIGPIPE ends a shell), a silent `sleep` runs on; runc's state still lists
 * it and the install record names a dead owner. The next start's recovery
 * (`abort`) SIGKILLs and deletes it, removes its bundle and the network.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { DaemonError, type InstallOutcome, type InstallScript, type ServerLimits } from '../../daemon.js';
import { bundlePathsIn, writeBundle } from '../container/bundle.js';
import { lastRuncError } from '../container/conmon.js';
import { containerLimits } from '../container/container-launcher.js';
import type { ContainerRuntime } from '../container/container-runtime.js';
import { containerSpec } from '../container/container-spec.js';
import { lineSplitter } from './install-log.js';

export const INSTALL_VOLUME = '/mnt/server';
/**
 * Inside the box's own /tmp (a tmpfs mounted before it): runc makes a missing
 * mount point in the root before making it read-only, and an image's root is
 * shared; its mount points are made at build time (images/rootfs-prepare.ts:
 * /mnt/server is one), and a folder in the tmpfs needs none.
 */
const SCRIPT_DIR = '/tmp/.quetzal-install';
const SCRIPT_NAME = 'install.sh';

/**
 * The first process: the egg's entrypoint (bash, ash, sh...) when the image
 * has it, `sh` otherwise (Wings would fail; an image without bash is common
 * for `ash` eggs and the reverse). `$0` is the entrypoint, `$1` the script.
 * Its standard error goes to the same pipe as its output: the lines keep the
 * order the script printed them in.
 */
const PICK_SHELL =
  'if command -v "$0" >/dev/null 2>&1; then exec "$0" "$1" 2>&1; fi; echo "$0 is not in this image: running the script with sh"; exec sh "$1" 2>&1';

export interface BoxTarget {
  readonly serverUuid: string;
  /** A real path (no links). */
  readonly volumeDir: string;
  readonly uid: number;
  readonly limits: ServerLimits | undefined;
  /** The image's root filesystem; null = the host's system folders, as servers on `host`. */
  readonly rootfs: string | null;
}

export function installBoxId(serverUuid: string): string {
  if (!/^[A-Za-z0-9][\w.+-]{0,100}$/.test(serverUuid))
    throw new Error(`not a usable container name: ${JSON.stringify(serverUuid)}`);
  return `qzinstall-${serverUuid}`;
}

export function installBundleDir(runDir: string, serverUuid: string): string {
  return path.join(runDir, 'installs', serverUuid);
}

/** Entrypoints an egg may name: a plain program name or an absolute path, nothing a shell would read. */
function checkedEntrypoint(entrypoint: string): string {
  const value = entrypoint.trim() || 'bash';
  if (!/^[A-Za-z0-9/_.+-]{1,200}$/.test(value))
    throw new DaemonError(`not a usable install entrypoint: ${JSON.stringify(entrypoint)}`);
  return value;
}

/** Runs the script in its box; resolves once the box ended and is gone. */
export async function runInstallBox(
  runtime: ContainerRuntime,
  runDir: string,
  target: BoxTarget,
  script: InstallScript,
  onLine: (line: string) => void,
): Promise<InstallOutcome> {
  const id = installBoxId(target.serverUuid);
  const entrypoint = checkedEntrypoint(script.entrypoint);
  await removeInstallBox(runtime, runDir, target.serverUuid);
  const dir = installBundleDir(runDir, target.serverUuid);
  const scriptDir = path.join(dir, 'script');
  await fs.mkdir(scriptDir, { recursive: true, mode: 0o700 });
  // Readable by the server's uid through its mount; nothing else of the bundle is.
  await fs.chmod(scriptDir, 0o755);
  await fs.writeFile(path.join(scriptDir, SCRIPT_NAME), script.script.replace(/\r\n?/g, '\n'), { mode: 0o644 });
  const attached = await runtime.network.attach(target.serverUuid, []);
  try {
    const spec = installSpec(runtime, target, script, entrypoint, scriptDir, attached.namespacePath);
    // pidFile is not used: `runc run` keeps the box's first process as its child.
    const paths = bundlePathsIn(dir);
    await writeBundle(paths, spec, runtime.host);
    return await runBox(runtime, id, dir, paths.runcLog, onLine);
  } finally {
    await removeInstallBox(runtime, runDir, target.serverUuid);
  }
}

function installSpec(
  runtime: ContainerRuntime,
  target: BoxTarget,
  script: InstallScript,
  entrypoint: string,
  scriptDir: string,
  networkNamespace: string,
): Record<string, unknown> {
  const spec = containerSpec({
    serverUuid: target.serverUuid,
    startup: '',
    volumeDir: target.volumeDir,
    uid: target.uid,
    gid: target.uid,
    limits: containerLimits(target.limits),
    cgroupsPath: `/quetzal/${installBoxId(target.serverUuid)}`,
    hiddenPaths: runtime.hiddenPaths,
    host: runtime.host,
    serviceEnv: process.env,
    extraEnv: script.environment,
    networkNamespace,
    resolvConf: runtime.network.resolvConf,
  }) as { process: Record<string, unknown>; mounts: Record<string, unknown>[]; root: Record<string, unknown> };
  spec.process.args = ['/bin/sh', '-c', PICK_SHELL, entrypoint, `${SCRIPT_DIR}/${SCRIPT_NAME}`];
  spec.process.cwd = INSTALL_VOLUME;
  spec.process.env = (spec.process.env as string[]).map((entry) =>
    entry.startsWith('HOME=') ? `HOME=${INSTALL_VOLUME}` : entry,
  );
  let mounts = spec.mounts.map((mount) =>
    mount.source === target.volumeDir && mount.type === 'bind' ? { ...mount, destination: INSTALL_VOLUME } : mount,
  );
  if (target.rootfs !== null) {
    // The image is the root: none of the host's system folders.
    const hostPaths = new Set([...runtime.host.systemDirs.map((dir) => dir.path), ...runtime.host.extraFiles]);
    mounts = mounts.filter((mount) => !(mount.type === 'bind' && hostPaths.has(String(mount.source))));
    spec.root = { path: target.rootfs, readonly: true };
  }
  mounts.push({ destination: SCRIPT_DIR, type: 'bind', source: scriptDir, options: ['bind', 'ro', 'nosuid', 'nodev'] });
  spec.mounts = mounts;
  return spec;
}

function runBox(
  runtime: ContainerRuntime,
  id: string,
  bundleDir: string,
  runcLog: string,
  onLine: (line: string) => void,
): Promise<InstallOutcome> {
  return new Promise<InstallOutcome>((resolve) => {
    const child = spawn(
      runtime.runc.binary,
      ['--root', runtime.runc.stateRoot, '--log', runcLog, '--log-format', 'json', 'run', '--bundle', bundleDir, id],
      // Its own session: a Ctrl-C aimed at the service's group must not end an install halfway.
      { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' } },
    );
    const out = lineSplitter(onLine);
    const err = lineSplitter(onLine);
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.once('error', (error) => resolve({ exitCode: -1, error: `runc could not run: ${error.message}` }));
    child.once('close', (code, signal) => {
      out.flush();
      err.flush();
      void lastRuncError(runcLog).then((reason) => {
        if (reason !== null) resolve({ exitCode: code ?? -1, error: `the installer box could not start: ${reason}` });
        else if (code === null) resolve({ exitCode: -1, error: `runc was ended by ${signal ?? 'a signal'}` });
        else resolve({ exitCode: code });
      });
    });
  });
}

/**
 * Ends a box of this server's install if one is left (SIGKILL to all of it,
 * then `runc delete`), removes its bundle and detaches the server's network.
 * Run again after a SIGKILL midway, it finishes the job. The caller makes sure
 * the server itself is not running (its network is the server's).
 */
export async function removeInstallBox(runtime: ContainerRuntime, runDir: string, serverUuid: string): Promise<void> {
  const id = installBoxId(serverUuid);
  const state = await runtime.runc.state(id);
  if (state !== null) {
    if (state.status !== 'stopped') await runtime.runc.kill(id, 'SIGKILL', { all: true }).catch(() => undefined);
    await runtime.runc.delete(id, { force: true }).catch(() => runtime.runc.delete(id, { force: true }));
  }
  await fs.rm(installBundleDir(runDir, serverUuid), { recursive: true, force: true });
  await runtime.network.detach(serverUuid);
}
