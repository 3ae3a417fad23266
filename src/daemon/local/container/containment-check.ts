/**
 * Whether this machine can confine server processes (docs/reference/containment.md): what
 * `CONTAINMENT=auto` decides on, `on` insists on, and `/health` reports.
 * Cheap (a file or two and one `runc --version`): run once at start.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { NEEDED_CONTROLLERS, readCgroupHierarchy, type CgroupHierarchy } from './cgroup-hierarchy.js';
import { findRunc } from './runc.js';

const execFileAsync = promisify(execFile);

export type ContainmentCheck =
  | { readonly available: true; readonly runc: string; readonly hierarchy: CgroupHierarchy }
  | { readonly available: false; readonly reason: string };

export async function detectContainment(): Promise<ContainmentCheck> {
  if (process.platform !== 'linux') return unavailable(`containers need Linux; this is ${process.platform}`);
  if (process.getuid?.() !== 0) return unavailable('the service does not run as root, which runc needs to make containers');
  if (!fs.existsSync('/proc/self/fd')) return unavailable('/proc is not mounted');
  const runc = findRunc();
  if (runc === null) return unavailable('runc is not installed (Debian and Ubuntu: apt-get install runc)');
  try {
    await execFileAsync(runc, ['--version'], { timeout: 5_000 });
  } catch (err) {
    return unavailable(`${runc} does not run: ${err instanceof Error ? err.message : String(err)}`);
  }
  let hierarchy: CgroupHierarchy | null;
  try {
    hierarchy = readCgroupHierarchy();
  } catch (err) {
    return unavailable(`cannot read /proc/self/mountinfo: ${err instanceof Error ? err.message : String(err)}`);
  }
  const problem = hierarchy === null ? 'no cgroup hierarchy is mounted' : cgroupProblem(hierarchy);
  if (problem !== null || hierarchy === null) return unavailable(problem ?? 'no cgroup hierarchy is mounted');
  return { available: true, runc, hierarchy };
}

function unavailable(reason: string): ContainmentCheck {
  return { available: false, reason };
}

/** Null when every needed controller is there and writable. */
export function cgroupProblem(hierarchy: CgroupHierarchy): string | null {
  if (hierarchy.version === 2) {
    const offered = readWords(path.join(hierarchy.root, 'cgroup.controllers'));
    // cgroup v2 has no cpuacct: `cpu` gives both the quota and the usage.
    const missing = NEEDED_CONTROLLERS.filter((name) => name !== 'cpuacct' && !offered.includes(name));
    if (missing.length > 0) return `the cgroup v2 controllers ${missing.join(', ')} are not available at ${hierarchy.root}`;
    return writable(path.join(hierarchy.root, 'cgroup.subtree_control'));
  }
  for (const controller of NEEDED_CONTROLLERS) {
    const mount = hierarchy.controllers.get(controller);
    if (mount === undefined) return `the ${controller} cgroup controller is not mounted`;
    const problem = writable(mount);
    if (problem !== null) return problem;
  }
  return null;
}

function writable(file: string): string | null {
  try {
    fs.accessSync(file, fs.constants.W_OK);
    return null;
  } catch (err) {
    return `${file} is not writable (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
  }
}

function readWords(file: string): string[] {
  try {
    return fs.readFileSync(file, 'utf8').trim().split(/\s+/);
  } catch {
    return [];
  }
}
