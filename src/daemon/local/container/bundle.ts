/**
 * A server's OCI bundle on disk, `<runDir>/containers/<uuid>/`: config.json,
 * the empty `rootfs/` that becomes the read-only root (made of the spec's
 * bind mounts and the system folders' links), the console FIFO and runc's
 * own log, the pid file, the exit status and the exit FIFO.
 *
 * After a SIGKILL: a half-written bundle is at worst a folder without
 * config.json (written last, by rename), which the next write replaces. A
 * bundle must only be (re)written while runc knows no container of that id:
 * removing a mount point folder under a running container's rootfs would
 * detach the mount inside it.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { HostLayout } from './container-spec.js';

export interface BundlePaths {
  readonly dir: string;
  readonly config: string;
  readonly rootfs: string;
  /** The container's standard input; kept at this path so that a restarted service can open it again. */
  readonly stdinFifo: string;
  /** runc's own messages (`--log`), separate from the server's console log. */
  readonly runcLog: string;
  /** The container's first process's host pid, written by `runc run --pid-file`. */
  readonly pidFile: string;
  /** The startup command's exit status, written by the container's first process (container-exit.ts). */
  readonly exitStatus: string;
  /** Ends (EOF) when the container does (container-exit.ts). */
  readonly exitFifo: string;
}

export function bundlePaths(runDir: string, serverUuid: string): BundlePaths {
  const dir = path.join(runDir, 'containers', serverUuid);
  return {
    dir,
    config: path.join(dir, 'config.json'),
    rootfs: path.join(dir, 'rootfs'),
    stdinFifo: path.join(dir, 'stdin.fifo'),
    runcLog: path.join(dir, 'runc.log'),
    pidFile: path.join(dir, 'init.pid'),
    exitStatus: path.join(dir, 'exit-status'),
    exitFifo: path.join(dir, 'exit.fifo'),
  };
}

/** Writes (or rewrites) the bundle; `spec` comes from containerSpec(). */
export async function writeBundle(paths: BundlePaths, spec: Record<string, unknown>, host: HostLayout): Promise<void> {
  // 0700: the bundle is the service's; the container sees none of it but its root's empty folders.
  await fs.mkdir(paths.dir, { recursive: true, mode: 0o700 });
  await fs.rm(paths.rootfs, { recursive: true, force: true });
  // 0755: after pivot_root, the server's uid walks from this folder to /home/container.
  await fs.mkdir(paths.rootfs, { mode: 0o755 });
  await fs.chmod(paths.rootfs, 0o755);
  for (const dir of host.systemDirs) {
    if (dir.kind === 'symlink') await fs.symlink(dir.target, path.join(paths.rootfs, dir.path));
  }
  const temporary = `${paths.config}.${randomBytes(4).toString('hex')}.tmp`;
  await fs.writeFile(temporary, `${JSON.stringify(spec, null, 2)}\n`, { mode: 0o600 });
  await fs.rename(temporary, paths.config);
}

/** Removes the bundle; only once runc has deleted the container (see the module's comment). */
export async function removeBundle(paths: BundlePaths): Promise<void> {
  await fs.rm(paths.dir, { recursive: true, force: true });
}
