/**
 * A server's OCI bundle on disk, `<runDir>/containers/<uuid>/`: config.json,
 * the empty `rootfs/` that becomes the read-only root (made of the spec's
 * bind mounts and the system folders' links), runc's own log, the pid files
 * of the container and of its monitor, and the monitor's exit folder and
 * sockets (conmon.ts). Nothing here is open inside the box.
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
  /** runc's own messages (`--log`), separate from the server's console log. */
  readonly runcLog: string;
  /** The container's first process's host pid, written by runc (`--pid-file`, through conmon's `-p`). */
  readonly pidFile: string;
  /** conmon's pid (conmon.ts). */
  readonly conmonPidFile: string;
  /** Where conmon writes the exit status once the container has ended (container-exit.ts). */
  readonly exitDir: string;
}

export function bundlePaths(runDir: string, serverUuid: string): BundlePaths {
  return bundlePathsIn(path.join(runDir, 'containers', serverUuid));
}

/** The files of a bundle in folder `dir` (a server's, or an installer box's). */
export function bundlePathsIn(dir: string): BundlePaths {
  return {
    dir,
    config: path.join(dir, 'config.json'),
    rootfs: path.join(dir, 'rootfs'),
    runcLog: path.join(dir, 'runc.log'),
    pidFile: path.join(dir, 'init.pid'),
    conmonPidFile: path.join(dir, 'conmon.pid'),
    exitDir: path.join(dir, 'exits'),
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
  // On an image (root.path absolute) this empty root is unused: the image has its own links.
  const root = (spec.root as { path?: unknown } | undefined)?.path;
  const onHost = !(typeof root === 'string' && path.isAbsolute(root));
  for (const dir of onHost ? host.systemDirs : []) {
    if (dir.kind === 'symlink') await fs.symlink(dir.target, path.join(paths.rootfs, dir.path));
  }
  const temporary = `${paths.config}.${randomBytes(4).toString('hex')}.tmp`;
  await fs.writeFile(temporary, `${JSON.stringify(spec, null, 2)}\n`, { mode: 0o600 });
  await fs.rename(temporary, paths.config);
}

/**
 * The root paths (absolute) that the bundles under `runDir` name: a box's
 * (`containers/<uuid>/config.json`) or any other kind's laid out the same way
 * (`<kind>/<id>/config.json`, e.g. an installer box's). An image version one
 * of them names is in use and must stay (images/local-images.ts). A bundle
 * being written is named by its temporary file too, so none is missed.
 */
export async function bundleRootPaths(runDir: string): Promise<string[]> {
  const roots: string[] = [];
  for (const kind of await fs.readdir(runDir).catch(() => [] as string[])) {
    for (const id of await fs.readdir(path.join(runDir, kind)).catch(() => [] as string[])) {
      const dir = path.join(runDir, kind, id);
      const files = (await fs.readdir(dir).catch(() => [] as string[])).filter((f) => f.startsWith('config.json'));
      for (const file of files) {
        const root = await fs
          .readFile(path.join(dir, file), 'utf8')
          .then((text) => (JSON.parse(text) as { root?: { path?: unknown } }).root?.path)
          .catch(() => undefined);
        if (typeof root === 'string') roots.push(path.resolve(dir, root));
      }
    }
  }
  return roots;
}

/** Removes the bundle; only once runc has deleted the container (see the module's comment). */
export async function removeBundle(paths: BundlePaths): Promise<void> {
  await fs.rm(paths.dir, { recursive: true, force: true });
}
