/**
 * Starting and removing one server's container: the bundle, the console
 * FIFO and `runc run`, in the order that lets a SIGKILL of the service
 * anywhere leave something the next service can tell apart:
 *   - before `runc run`: a bundle and perhaps its FIFOs and status file, no
 *     container; the next start rewrites them all;
 *   - during `runc run`: runc (in its own session) finishes without us; the
 *     container then runs, or runc lists it `created`/`stopped`: `runc delete
 *     --force` clears either;
 *   - after: a running container the next service re-attaches (its FIFO by
 *     path, its console log by name) or deletes.
 */
import type net from 'node:net';
import { createExitChannel, type ContainerExit, type ExitChannel } from './container-exit.js';
import { bundlePaths, removeBundle, writeBundle, type BundlePaths } from './bundle.js';
import { containerId, containerSpec, type ContainerOptions } from './container-spec.js';
import { isGone, readProcStatSync } from '../process/proc.js';
import type { Runc } from './runc.js';
import { closeQuietly, createStdinFifo } from './stdin-fifo.js';

export interface StartedContainer {
  readonly id: string;
  /** The container's first process, as the host sees it. */
  readonly pid: number;
  readonly paths: BundlePaths;
  /** The service's end of the console. */
  readonly stdin: net.Socket;
  /** Resolves once the container has ended (container-exit.ts). */
  readonly exited: Promise<ContainerExit>;
}

export class ContainerExistsError extends Error {
  constructor(readonly id: string) {
    super(`container ${id} already exists: re-attach or delete it first`);
    this.name = 'ContainerExistsError';
  }
}

/** `logFd`: the console log, opened for append; the container writes to it directly. */
export async function startServerContainer(runc: Runc, runDir: string, options: ContainerOptions, logFd: number): Promise<StartedContainer> {
  const id = containerId(options.serverUuid);
  if ((await runc.state(id)) !== null) throw new ContainerExistsError(id);
  const paths = bundlePaths(runDir, options.serverUuid);
  await writeBundle(paths, containerSpec(options), options.host);
  const fifo = await createStdinFifo(paths.stdinFifo);
  let exit: ExitChannel;
  try {
    exit = await createExitChannel(paths);
  } catch (err) {
    fifo.writer.destroy();
    closeQuietly(fifo.readFd);
    closeQuietly(fifo.keepOpenFd);
    throw err;
  }
  let pid: number;
  try {
    // The container's 3, 4 and 5, as INIT_SCRIPT expects them.
    const extra = [fifo.keepOpenFd, exit.statusFd, exit.exitWriteFd];
    pid = await runc.run(id, paths.dir, { stdin: fifo.readFd, stdout: logFd, stderr: logFd, extra }, paths);
  } catch (err) {
    fifo.writer.destroy();
    await runc.delete(id, { force: true }).catch(() => undefined);
    throw err;
  } finally {
    // The container holds its own copies now; ours would keep the pipes open after it is gone.
    for (const fd of [fifo.readFd, fifo.keepOpenFd, exit.statusFd, exit.exitWriteFd]) closeQuietly(fd);
  }
  // A startup command that ends at once (`sh -c true`) may be gone already: that is an exit, not a failure to start.
  return { id, pid, paths, stdin: fifo.writer, exited: exit.exited };
}

/**
 * SIGKILLs whatever still runs in the container, forgets it and removes its
 * bundle. Not `runc delete --force` straight away: that sleeps 100 ms
 * between its checks; a SIGKILL, a 5 ms poll of the first process and a plain
 * delete take a few milliseconds. A SIGKILL of the service midway leaves a
 * stopped container, or a bundle without one: this, run again, clears both.
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
