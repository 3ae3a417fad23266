/**
 * Where the machine's cgroup controllers are mounted, read from
 * /proc/self/mountinfo: one unified cgroup2 tree, or one cgroup v1 tree a
 * controller (several controllers may share one, as in `cpu,cpuacct`). A
 * cgroup2 tree beside v1 ones (the "hybrid" layout) holds no controller and
 * is not what runc uses then, so it does not count.
 */
import fs from 'node:fs';

export type CgroupHierarchy =
  { readonly version: 2; readonly root: string } | { readonly version: 1; readonly controllers: ReadonlyMap<string, string> };

/** The controllers a container's limits and figures need. */
export const NEEDED_CONTROLLERS = ['memory', 'cpu', 'cpuacct', 'pids'] as const;

const UNIFIED_ROOT = '/sys/fs/cgroup';

export function readCgroupHierarchy(mountinfo = fs.readFileSync('/proc/self/mountinfo', 'utf8')): CgroupHierarchy | null {
  const controllers = new Map<string, string>();
  let unified: string | null = null;
  for (const line of mountinfo.split('\n')) {
    // "36 25 0:31 / /sys/fs/cgroup/memory rw,relatime shared:14 - cgroup cgroup rw,memory"
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const mountPoint = unescapeMountPath(left.split(' ')[4] ?? '');
    const [fsType, , superOptions = ''] = right.split(' ');
    if (fsType === 'cgroup2' && mountPoint === UNIFIED_ROOT) unified = mountPoint;
    if (fsType !== 'cgroup') continue;
    for (const option of superOptions.split(',')) {
      if ((NEEDED_CONTROLLERS as readonly string[]).includes(option) && !controllers.has(option))
        controllers.set(option, mountPoint);
    }
  }
  if (unified !== null) return { version: 2, root: unified };
  return controllers.size > 0 ? { version: 1, controllers } : null;
}

/** mountinfo writes space, tab, newline and backslash in paths as octal escapes. */
function unescapeMountPath(raw: string): string {
  return raw.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}
