/**
 * What a container spec needs to know of this host: which system folders are
 * folders and which are links (merged /usr), files they only link to, and
 * whether swap can be limited. Read once per service start: it changes only
 * when the operating system is reinstalled.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readCgroupHierarchy, type CgroupHierarchy } from './cgroup-hierarchy.js';
import type { HostLayout, SystemDir } from './container-spec.js';

/** Read-only in every container: what ordinary programs (`java -jar`, `node`, `sh -c`) need to run. */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'];
/** Links a program follows that may lead out of the bound folders (systemd-resolved's stub in /run). */
const LINKED_FILES = ['/etc/resolv.conf'];

export function inspectHostLayout(hierarchy: CgroupHierarchy | null = readCgroupHierarchy()): HostLayout {
  const systemDirs: SystemDir[] = [];
  for (const dir of SYSTEM_DIRS) {
    const stats = fs.lstatSync(dir, { throwIfNoEntry: false });
    if (stats?.isSymbolicLink()) systemDirs.push({ path: dir, kind: 'symlink', target: fs.readlinkSync(dir) });
    else if (stats?.isDirectory()) systemDirs.push({ path: dir, kind: 'dir' });
  }
  const bound = systemDirs.filter((dir) => dir.kind === 'dir').map((dir) => dir.path);
  const extraFiles: string[] = [];
  for (const file of LINKED_FILES) {
    const real = realPathOrNull(file);
    if (real !== null && !bound.some((dir) => real.startsWith(`${dir}/`)) && fs.statSync(real).isFile()) extraFiles.push(real);
  }
  return { systemDirs, extraFiles, swapLimit: canLimitSwap(hierarchy), nofileHardLimit: ownNofileHardLimit() };
}

/** From /proc/self/limits ("Max open files  1024  524288  files"); Node has no getrlimit. */
function ownNofileHardLimit(): number {
  const line = fs
    .readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((row) => row.startsWith('Max open files'));
  const hard = line?.split(/\s+/)[4];
  // "unlimited" cannot be given to runc as a number it would accept for NOFILE; the kernel's ceiling is nr_open.
  return hard === undefined || hard === 'unlimited' ? 1024 : Number(hard);
}

function canLimitSwap(hierarchy: CgroupHierarchy | null): boolean {
  if (hierarchy === null) return false;
  if (hierarchy.version === 2)
    return fs.existsSync(path.join(hierarchy.root, 'init.scope', 'memory.swap.max')) || hasSwapMaxBelow(hierarchy.root);
  const memory = hierarchy.controllers.get('memory');
  return memory !== undefined && fs.existsSync(path.join(memory, 'memory.memsw.limit_in_bytes'));
}

/** The root cgroup has no memory.swap.max; any child with the memory controller on does. */
function hasSwapMaxBelow(root: string): boolean {
  try {
    return (
      fs.readFileSync(path.join(root, 'cgroup.subtree_control'), 'utf8').split(/\s+/).includes('memory') &&
      fs
        .readdirSync(root, { withFileTypes: true })
        .some((entry) => entry.isDirectory() && fs.existsSync(path.join(root, entry.name, 'memory.swap.max')))
    );
  } catch {
    return false;
  }
}

function realPathOrNull(file: string): string | null {
  try {
    return fs.realpathSync(file);
  } catch {
    return null;
  }
}
