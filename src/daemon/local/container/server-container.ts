/**
 * Starting and removing one server's container: the bundle, conmon (which
 * runs `runc create` with pipes as the container's stdio, conmon.ts) and
 * `runc start`, in the order that lets a SIGKILL of the service anywhere
 * leave something the next service can tell apart:
 *   - before conmon: a bundle, no container; the next start rewrites it;
 *   - during conmon's create: conmon (its own session) finishes without us;
 *     runc then lists the container `created`: never started, so no server
 *     code ran; removed by the next start or sweep;
 *   - between create and start: the same (`created`);
 *   - after `runc start`: a running container with its conmon, which the next
 *     service adopts (its pid file says so) or, when no pid file names it,
 *     removes.
 */
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import { bundlePaths, removeBundle, writeBundle, type BundlePaths } from './bundle.js';
import { startMonitored } from './conmon.js';
import { watchContainerExit, type ExitWatch } from './container-exit.js';
import { containerId, containerSpec, type ContainerOptions } from './container-spec.js';
import { isGone, readProcStatSync } from '../process/proc.js';
import type { Runc } from './runc.js';

export interface StartedContainer {
  readonly id: string;
  /** The container's first process, as the host sees it. */
  readonly pid: number;
  readonly paths: BundlePaths;
  /** Our end of its console (openContainerStdin), opened before it starts: one that ends at once has none to open later. */
  readonly stdin: net.Socket;
  /** Settles once the container has ended (container-exit.ts). */
  readonly exit: ExitWatch;
}

export class ContainerExistsError extends Error {
  constructor(readonly id: string) {
    super(`container ${id} already exists: adopt or delete it first`);
    this.name = 'ContainerExistsError';
  }
}

export interface ConsoleCapture {
  readonly conmon: string;
  /** The console log conmon writes (k8s-file), and its cap in bytes. */
  readonly logPath: string;
  readonly logSizeMax: number;
}

export async function startServerContainer(
  runc: Runc,
  runDir: string,
  options: ContainerOptions,
  capture: ConsoleCapture,
): Promise<StartedContainer> {
  const id = containerId(options.serverUuid);
  if ((await runc.state(id)) !== null) throw new ContainerExistsError(id);
  const paths = bundlePaths(runDir, options.serverUuid);
  await writeBundle(paths, containerSpec(options), options.host);
  await fs.rm(paths.exitDir, { recursive: true, force: true });
  const { containerPid } = await startMonitored({
    conmon: capture.conmon,
    runc: runc.binary,
    runcRoot: runc.stateRoot,
    id,
    bundleDir: paths.dir,
    files: {
      log: capture.logPath,
      exitDir: paths.exitDir,
      conmonPidFile: paths.conmonPidFile,
      containerPidFile: paths.pidFile,
      runcLog: paths.runcLog,
    },
    logSizeMax: capture.logSizeMax,
  });
  // Watched before the start: a startup command that ends at once (`sh -c true`) is an exit, not a failure to start.
  const exit = watchContainerExit(paths.exitDir, id, paths.conmonPidFile, true);
  let stdin: net.Socket | undefined;
  try {
    stdin = openContainerStdin(containerPid);
    await runc.start(id);
  } catch (err) {
    stdin?.destroy();
    exit.detach();
    await removeServerContainer(runc, runDir, options.serverUuid).catch(() => undefined);
    throw err;
  }
  return { id, pid: containerPid, paths, stdin, exit };
}

/**
 * Our end of the container's console: its first process's standard input is
 * the pipe conmon made (`-i`), and opening it through /proc gives a new
 * descriptor to that same pipe, for writing. Works as well for an adopted
 * container; conmon keeps its own write end, so closing ours never gives the
 * server end-of-file. Refuses anything but a pipe.
 */
export function openContainerStdin(pid: number): net.Socket {
  const { O_WRONLY, O_NONBLOCK, O_NOCTTY } = fsSync.constants;
  const fd = fsSync.openSync(`/proc/${pid}/fd/0`, O_WRONLY | O_NONBLOCK | O_NOCTTY);
  if (!fsSync.fstatSync(fd).isFIFO()) {
    fsSync.closeSync(fd);
    throw new Error(`the standard input of process ${pid} is not a pipe`);
  }
  return new net.Socket({ fd, readable: false, writable: true });
}

/** Watches a container a previous service started (adoption); `exited` settles at once if it ended meanwhile. */
export function watchAdoptedContainer(runDir: string, serverUuid: string): ExitWatch {
  const paths = bundlePaths(runDir, serverUuid);
  return watchContainerExit(paths.exitDir, containerId(serverUuid), paths.conmonPidFile, false);
}

/**
 * SIGKILLs whatever still runs in the container, forgets it and removes its
 * bundle. Not `runc delete --force` straight away: that sleeps 100 ms
 * between its checks; a SIGKILL, a 5 ms poll of the first process and a plain
 * delete take a few milliseconds. A SIGKILL of the service midway leaves a
 * stopped container, or a bundle without one: this, run again, clears both.
 * conmon exits by itself once the container has ended.
 */
export async function removeServerContainer(runc: Runc, runDir: string, serverUuid: string): Promise<void> {
  const id = containerId(serverUuid);
  const state = await runc.state(id);
  if (state !== null) {
    if (state.status !== 'stopped') {
      await runc.kill(id, 'SIGKILL', { all: true }).catch(() => undefined);
      await waitForExit(state.pid, KILL_WAIT_MS);
    }
    // Still running after all (a process stuck in the kernel): --force waits for it.
    await runc.delete(id).catch(() => runc.delete(id, { force: true }));
  }
  await removeBundle(bundlePaths(runDir, serverUuid));
}

const KILL_WAIT_MS = 2_000;

/** Whether the host pid is gone (or a zombie) within `timeoutMs`; pid 0 (none) is gone. */
async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const stat = pid > 0 ? readProcStatSync(pid) : null;
    if (stat === null || isGone(stat)) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
