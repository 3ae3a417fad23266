/**
 * Makes a staged root file system fit to be shared read-only by many boxes
 * (docs/reference/eggs-and-installs.md), once, at build or import time, before it becomes an image:
 *
 * - every mount point the box uses exists as a real folder (or, for
 *   /etc/resolv.conf, a real file): runc creates a missing mount point in the
 *   root before it makes the root read-only, and it must never write into a
 *   shared image. A link or a file where a folder must be is replaced.
 * - /dev is emptied (the box mounts a tmpfs there) and no device node is left
 *   anywhere: an archive's device files would be an image's way to the host's
 *   disks (the devices cgroup denies them too; this is the second wall).
 * - no setuid or setgid bit: the box's processes run as the server's uid with
 *   no_new_privs, so the bits could only matter if that ever changed.
 * - everything readable by any uid (`a+rX`): servers run as uids of their own,
 *   which an image's files (often root's, 0600 here and there) know nothing of.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Folders the box mounts on (container-spec.ts) or an installer box uses (/mnt/server). */
export const IMAGE_MOUNT_DIRS = ['proc', 'dev', 'sys', 'tmp', 'home/container', 'mnt/server'] as const;
const RESOLV_CONF = 'etc/resolv.conf';
const HOSTS = 'etc/hosts';

export async function prepareRootfs(rootfs: string): Promise<void> {
  await fs.chmod(rootfs, 0o755);
  await fs.rm(path.join(rootfs, 'dev'), { recursive: true, force: true });
  for (const dir of IMAGE_MOUNT_DIRS) await ensureRealDir(rootfs, dir);
  await fs.chmod(path.join(rootfs, 'tmp'), 0o1777);
  await ensureRealDir(rootfs, 'etc');
  await ensureRegularFile(rootfs, RESOLV_CONF, '');
  await ensureRegularFile(rootfs, HOSTS, '127.0.0.1\tlocalhost\n::1\tlocalhost\n', { keepExisting: true });
  // -xdev: the staging folder holds no mount (the tools ran in mount namespaces of their own), but never cross one.
  await run('find', [rootfs, '-xdev', '(', '-type', 'b', '-o', '-type', 'c', ')', '-delete']);
  await run('find', [rootfs, '-xdev', '-perm', '/6000', '!', '-type', 'l', '-exec', 'chmod', 'ug-s', '{}', '+']);
  // chmod -R does not follow the links it meets inside the tree.
  await run('chmod', ['-R', 'a+rX', rootfs]);
}

/** Bytes the tree takes on disk (allocated blocks, as `du` counts them; hard links once). */
export async function diskBytes(dir: string): Promise<number> {
  const { stdout } = await run('du', ['-s', '-x', '-B1', dir]);
  const bytes = Number(stdout.split(/\s/)[0]);
  return Number.isSafeInteger(bytes) ? bytes : 0;
}

/** Each component of `relative` under `rootfs` a real folder: links and files in the way are removed. */
async function ensureRealDir(rootfs: string, relative: string): Promise<void> {
  let current = rootfs;
  for (const part of relative.split('/')) {
    current = path.join(current, part);
    const stat = await fs.lstat(current).catch(() => null);
    if (stat?.isDirectory()) continue;
    if (stat !== null) await fs.rm(current, { recursive: true, force: true });
    await fs.mkdir(current, { mode: 0o755 });
  }
}

async function ensureRegularFile(
  rootfs: string,
  relative: string,
  content: string,
  opts: { keepExisting?: boolean } = {},
): Promise<void> {
  const file = path.join(rootfs, relative);
  const stat = await fs.lstat(file).catch(() => null);
  if (stat?.isFile() && opts.keepExisting) return;
  if (stat !== null) await fs.rm(file, { recursive: true, force: true });
  await fs.writeFile(file, content, { mode: 0o644 });
}
