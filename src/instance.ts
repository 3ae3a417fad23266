import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';

/**
 * Who holds a run. A claim is stamped with the claiming instance's id; the id
 * carries the host, the host's boot and the process id, so that an instance on
 * the same machine can tell at once that the holder is dead (its process is
 * gone) instead of waiting for the lease to run out — which is what makes a
 * restarted service resume its interrupted runs immediately.
 *
 * Format: `label|hostname|bootId|pid|random`. Only the last four parts are read
 * back; the label is for humans.
 */
export interface InstanceIdentity {
  readonly id: string;
  readonly hostname: string;
  readonly bootId: string;
  readonly pid: number;
}

const SEPARATOR = '|';

function readBootId(): string {
  try {
    // Linux: changes on every boot, so a pid from before a reboot is never mistaken for a live one.
    return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().replace(/-/g, '').slice(0, 12);
  } catch {
    return 'noboot';
  }
}

const clean = (part: string) => part.replace(/[|\s]/g, '_');

export function instanceIdentity(label = 'quetzal'): InstanceIdentity {
  const hostname = clean(os.hostname()).slice(0, 64);
  const bootId = readBootId();
  const pid = process.pid;
  const id = [clean(label).slice(0, 64), hostname, bootId, String(pid), randomBytes(4).toString('hex')].join(SEPARATOR);
  return { id, hostname, bootId, pid };
}

function parseClaimant(claimedBy: string): { hostname: string; bootId: string; pid: number } | null {
  const parts = claimedBy.split(SEPARATOR);
  if (parts.length < 5) return null;
  const [hostname, bootId, pid] = parts.slice(-4, -1) as [string, string, string];
  const n = Number(pid);
  return Number.isSafeInteger(n) && n > 0 ? { hostname, bootId, pid: n } : null;
}

/**
 * True only when the claimant certainly died: it ran on this very machine in
 * this boot and its process no longer exists. Anything else (another machine,
 * an unknown format, a pid that is alive, even if reused) is "maybe alive", and
 * its lease decides.
 */
export function claimantIsDead(claimedBy: string, self: InstanceIdentity): boolean {
  const claimant = parseClaimant(claimedBy);
  if (!claimant) return false;
  if (claimant.hostname !== self.hostname || claimant.bootId !== self.bootId || self.bootId === 'noboot') return false;
  // Another scheduler in this very process (tests run several): alive as far as we know; its lease decides.
  if (claimant.pid === self.pid) return false;
  try {
    process.kill(claimant.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

let thisProcess: InstanceIdentity | undefined;

/**
 * The identity this process stamps the restores and backups it runs with
 * (docs/RESTORE.md "Crash safety"): one per process, so that every restore
 * and backup of a dead process is recognised as dead together.
 */
export function processInstance(): InstanceIdentity {
  thisProcess ??= instanceIdentity('files');
  return thisProcess;
}

/**
 * `claimantIsDead`, or the claimant ran on a machine of this name in an earlier
 * boot: after a power cut the restores and backups in progress belong to
 * processes of the previous boot, and must not wait for their leases. Only for
 * work whose files are on this machine (a restore's folder, a partial
 * archive): two machines sharing a name could otherwise take each other's.
 */
export function claimantDiedOrRebooted(claimedBy: string, self: InstanceIdentity): boolean {
  if (claimantIsDead(claimedBy, self)) return true;
  const claimant = parseClaimant(claimedBy);
  return claimant !== null && self.bootId !== 'noboot' && claimant.hostname === self.hostname && claimant.bootId !== self.bootId;
}
