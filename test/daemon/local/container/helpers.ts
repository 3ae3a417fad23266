/**
 * What the container tests share: a fake DATA_DIR per test (a secret file,
 * a volume owned by the server uid, the run folder with runc's state), a
 * container started in it with real runc, and the clean-up that deletes
 * every container the test left. Containers need root and runc; without
 * them these tests fail, on purpose: CI installs runc (.ci/run).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { readCgroupHierarchy, type CgroupHierarchy } from '../../../../src/daemon/local/container/cgroup-hierarchy.js';
import { defaultCgroupsPath, type ContainerLimits } from '../../../../src/daemon/local/container/container-spec.js';
import { inspectHostLayout } from '../../../../src/daemon/local/container/host-layout.js';
import { findRunc, Runc } from '../../../../src/daemon/local/container/runc.js';
import { findConmon } from '../../../../src/daemon/local/container/conmon.js';
import type { ContainerExit } from '../../../../src/daemon/local/container/container-exit.js';
import { startServerContainer, type StartedContainer } from '../../../../src/daemon/local/container/server-container.js';
import { joinConsoleRecords } from '../../../../src/daemon/local/process/console-record.js';

export const SERVER_UID = 988;
/** Probes of the running test, for the clean-up. */
const started: ProbeContainer[] = [];
export const NO_LIMITS: ContainerLimits = { memoryMiB: 0, cpuPercent: 0, pids: 0 };

/** Fails (never skips) when containers cannot be made here, saying what to do. */
export function requireRunc(): string {
  if (process.platform !== 'linux') throw new Error('container tests need Linux');
  if (process.getuid?.() !== 0) throw new Error('container tests need root (runc makes real containers)');
  const runc = findRunc();
  if (runc === null) throw new Error('runc is not installed: apt-get install -y runc (CI installs it in .ci/run)');
  if (findConmon() === null) throw new Error('conmon is not installed: apt-get install -y conmon (CI installs it in .ci/run)');
  return runc;
}

export interface Sandbox {
  readonly dataDir: string;
  readonly runDir: string;
  readonly runc: Runc;
  readonly hierarchy: CgroupHierarchy;
}

export interface ProbeContainer extends StartedContainer {
  readonly serverUuid: string;
  readonly volumeDir: string;
  /** conmon's log (Kubernetes' format: readLog gives the plain lines). */
  readonly logFile: string;
  readonly cgroupsPath: string;
  readonly exited: Promise<ContainerExit>;
}

/** Test logs are small: a cap far above what a probe prints. */
const PROBE_LOG_MAX = 8 * 1024 * 1024;

/** A fresh fake DATA_DIR per test; every container started in it is deleted after the test. */
export function useSandbox(): () => Sandbox {
  let current: Sandbox | null = null;
  beforeEach(() => {
    const runcPath = requireRunc();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-container-'));
    fs.writeFileSync(path.join(dataDir, 'quetzal.sqlite'), 'the database');
    fs.writeFileSync(path.join(dataDir, 'initial-api-key'), 'a key', { mode: 0o644 });
    const runDir = path.join(dataDir, 'run');
    const hierarchy = readCgroupHierarchy();
    if (hierarchy === null) throw new Error('no cgroup hierarchy is mounted');
    current = { dataDir, runDir, runc: new Runc(runcPath, path.join(runDir, 'runc')), hierarchy };
  });
  afterEach(async () => {
    if (!current) return;
    for (const container of await current.runc.list()) await current.runc.delete(container.id, { force: true });
    for (const probe of started.splice(0)) {
      probe.stdin.destroy();
      probe.exit.detach();
    }
    fs.rmSync(current.dataDir, { recursive: true, force: true });
    current = null;
  });
  return () => {
    if (!current) throw new Error('no sandbox outside a test');
    return current;
  };
}

/**
 * Starts `startup` in a new server's container in the sandbox: volume owned by
 * SERVER_UID (with `files` in it, executable), console log in the sandbox.
 */
export async function startProbe(
  sandbox: Sandbox,
  startup: string,
  limits: ContainerLimits = NO_LIMITS,
  hiddenPaths: string[] = [sandbox.dataDir],
  files: Readonly<Record<string, string | Buffer>> = {},
): Promise<ProbeContainer> {
  const serverUuid = randomUUID();
  const volumeDir = path.join(sandbox.dataDir, 'volumes', serverUuid);
  fs.mkdirSync(volumeDir, { recursive: true });
  fs.chownSync(volumeDir, SERVER_UID, SERVER_UID);
  for (const [name, content] of Object.entries(files)) {
    fs.writeFileSync(path.join(volumeDir, name), content, { mode: 0o755 });
    fs.chownSync(path.join(volumeDir, name), SERVER_UID, SERVER_UID);
  }
  const logFile = path.join(sandbox.dataDir, 'logs', `${serverUuid}.log`);
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const cgroupsPath = defaultCgroupsPath(serverUuid);
  const conmon = findConmon()!;
  {
    const container = await startServerContainer(
      sandbox.runc,
      sandbox.runDir,
      {
        serverUuid,
        startup,
        volumeDir,
        uid: SERVER_UID,
        gid: SERVER_UID,
        limits,
        cgroupsPath,
        hiddenPaths,
        host: inspectHostLayout(sandbox.hierarchy),
      },
      { conmon, logPath: logFile, logSizeMax: PROBE_LOG_MAX },
    );
    const probe = { ...container, serverUuid, volumeDir, logFile, cgroupsPath, exited: container.exit.exited };
    started.push(probe);
    return probe;
  }
}

/** The server's output as it printed it: conmon's records joined into lines. */
export function readLog(probe: ProbeContainer): string {
  return plainLog(probe.logFile);
}

export function plainLog(file: string): string {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
  const raw = text.split('\n');
  raw.pop();
  return joinConsoleRecords(raw, Number.MAX_SAFE_INTEGER)
    .map((line) => `${line}\n`)
    .join('');
}

/** Polls `check` until it holds; fails with `what` after `timeoutMs`. */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Host pids of the processes in a container's cgroup (v1: the pids controller's cgroup.procs). */
export function cgroupProcs(hierarchy: CgroupHierarchy, cgroupsPath: string): number[] {
  const dir = hierarchy.version === 2 ? hierarchy.root : hierarchy.controllers.get('pids');
  if (dir === undefined) throw new Error('no pids controller');
  const text = fs.readFileSync(path.join(dir, cgroupsPath, 'cgroup.procs'), 'utf8');
  return text.split('\n').filter(Boolean).map(Number);
}
