/**
 * `CONTAINMENT=auto|on|off` (docs/reference/containment.md) decided once at start: whether server
 * processes run in runc containers, and what every container of this service
 * shares (runc, the cgroup hierarchy, the host's layout, the uid, what they
 * must never see).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CgroupHierarchy } from './cgroup-hierarchy.js';
import { findConmon } from './conmon.js';
import { detectContainment } from './containment-check.js';
import { maskedHostPaths, type HostLayout } from './container-spec.js';
import { inspectHostLayout } from './host-layout.js';
import { Runc } from './runc.js';
import { resolveServerNetwork } from '../network/network-runtime.js';
import type { ServerNetwork } from '../network/server-network.js';

export type ContainmentMode = 'auto' | 'on' | 'off';

export interface UidRange {
  readonly first: number;
  readonly last: number;
}

/** No uid is left for a server: its slot lies past SERVER_UID_RANGE's end. */
export class UidRangeExhaustedError extends Error {}

/**
 * The uid (and gid) a confined server runs as: its own, SERVER_UID_RANGE's
 * first + its slot (servers.uid_slot, unique), so that no two servers share
 * per-user kernel limits or files; SERVER_UID when there is no range or the
 * server has no slot.
 */
export function serverUid(runtime: Pick<ContainerRuntime, 'uid' | 'uidRange'>, uidSlot: number | null | undefined): number {
  if (runtime.uidRange === null || uidSlot === null || uidSlot === undefined) return runtime.uid;
  const uid = runtime.uidRange.first + uidSlot;
  if (!Number.isSafeInteger(uidSlot) || uidSlot < 0 || uid > runtime.uidRange.last)
    throw new UidRangeExhaustedError(
      `uid slot ${uidSlot} lies past SERVER_UID_RANGE ${runtime.uidRange.first}-${runtime.uidRange.last}: widen the range`,
    );
  return uid;
}

export interface ContainerRuntime {
  readonly runc: Runc;
  /** conmon's absolute path: the monitor that holds each container's stdio (conmon.ts, docs/reference/power-and-console.md#servers-outlive-the-service). */
  readonly conmon: string;
  readonly hierarchy: CgroupHierarchy;
  readonly host: HostLayout;
  /** SERVER_UID: the uid and gid of a confined server without a uid slot (all of them when there is no range). */
  readonly uid: number;
  /** SERVER_UID_RANGE: a server with uid slot n runs as first + n (uid and gid); null = every server as `uid`. */
  readonly uidRange: UidRange | null;
  /** Real host paths no container may see (DATA_DIR, the `.env` file). */
  readonly hiddenPaths: readonly string[];
  /** Each server's own network namespace and the firewall table (docs/reference/network-and-allocations.md). */
  readonly network: ServerNetwork;
}

/** CONTAINMENT=on on a machine that cannot confine: the service refuses to start. */
export class ContainmentUnavailableError extends Error {
  constructor(reason: string) {
    super(`CONTAINMENT=on, but server processes cannot be confined here: ${reason}`);
    this.name = 'ContainmentUnavailableError';
  }
}

export interface ContainmentSettings {
  readonly mode: ContainmentMode;
  readonly uid: number;
  readonly uidRange?: UidRange | null;
  readonly dataDir: string;
  /** Where runc keeps its state: the service's own `--root`. */
  readonly runDir: string;
  /** More host paths to hide (the `.env` file's). */
  readonly hiddenPaths?: readonly string[];
  /** SERVER_NETWORK: the pool servers' inside addresses come from. */
  readonly serverNetwork?: string;
}

export interface ContainmentWarner {
  warn(obj: object, msg: string): void;
  error?(obj: object, msg: string): void;
}

/** Null = run unconfined (`off`, or `auto` where the machine cannot confine: warned once). Throws for `on` without the means. */
export async function resolveContainment(
  settings: ContainmentSettings,
  log: ContainmentWarner,
): Promise<ContainerRuntime | null> {
  if (settings.mode === 'off') return null;
  const runtime = await tryContainment(settings, log);
  if ('runtime' in runtime) return runtime.runtime;
  if (settings.mode === 'on') throw new ContainmentUnavailableError(runtime.reason);
  log.warn(
    { reason: runtime.reason },
    'server processes run unconfined, as the service user, with no limits (CONTAINMENT=auto): see the README, "Containment"',
  );
  return null;
}

async function tryContainment(
  settings: ContainmentSettings,
  log: ContainmentWarner,
): Promise<{ runtime: ContainerRuntime } | { reason: string }> {
  const ownUid = process.getuid?.();
  if (settings.uid === ownUid) return { reason: `SERVER_UID ${settings.uid} is the service's own uid` };
  const range = settings.uidRange ?? null;
  if (range !== null && ownUid !== undefined && ownUid >= range.first && ownUid <= range.last)
    return { reason: `SERVER_UID_RANGE ${range.first}-${range.last} holds the service's own uid ${ownUid}` };
  const check = await detectContainment();
  if (!check.available) return { reason: check.reason };
  const conmon = findConmon();
  if (conmon === null) return { reason: 'conmon (the containers monitor, Debian package `conmon`) is not installed' };
  const host = inspectHostLayout(check.hierarchy);
  const hiddenPaths = [settings.dataDir, ...(settings.hiddenPaths ?? [])].flatMap((hidden) => {
    try {
      return [fs.realpathSync(hidden)];
    } catch {
      return [];
    }
  });
  try {
    maskedHostPaths(hiddenPaths, host.systemDirs);
  } catch (err) {
    return { reason: (err as Error).message };
  }
  const network = await resolveServerNetwork({
    runDir: settings.runDir,
    ...(settings.serverNetwork !== undefined ? { serverNetwork: settings.serverNetwork } : {}),
    log: { warn: (obj, msg) => log.warn(obj, msg), error: (obj, msg) => (log.error ?? log.warn).call(log, obj, msg) },
  });
  if ('reason' in network) return { reason: network.reason };
  return {
    runtime: {
      runc: new Runc(check.runc, path.join(settings.runDir, 'runc')),
      conmon,
      hierarchy: check.hierarchy,
      host,
      uid: settings.uid,
      uidRange: range,
      hiddenPaths,
      network: network.network,
    },
  };
}
