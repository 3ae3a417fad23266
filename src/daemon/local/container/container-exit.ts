/**
 * How the service learns that a container's server process exited, and how:
 * the container's first process is not the service's child (runc runs it
 * detached, and it must outlive the service), so no 'exit' event comes.
 *
 * The first process is a small shell (container-spec.ts, INIT_SCRIPT) that
 * runs the startup command as its child and then writes its exit status to
 * descriptor 4, a file in the bundle; it also holds descriptor 5, the write
 * end of a FIFO in the bundle, and nothing else does. When it ends, every
 * process in the container ends with it (PID namespace), so the FIFO's reader
 * sees end-of-file: the moment of exit, without polling. The status is
 * written before that. A restarted service opens the FIFO again by path; if
 * the container ended meanwhile, the read ends at once.
 *
 * After a SIGKILL of the service: the files stay in the bundle (removed with
 * it); nothing else is held.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { BundlePaths } from './bundle.js';
import { closeQuietly } from './stdin-fifo.js';

const execFileAsync = promisify(execFile);
const openFd = promisify(fs.open);

export interface ContainerExit {
  /** The startup command's exit code; null when a signal ended it, or when nothing was recorded. */
  readonly code: number | null;
  /** The signal that ended it; SIGKILL too when the first process itself was killed (nothing recorded). */
  readonly signal: NodeJS.Signals | null;
}

export interface ExitChannel {
  /** For the container (its descriptor 4): where the first process writes the status. */
  readonly statusFd: number;
  /** For the container (its descriptor 5): the FIFO's write end. */
  readonly exitWriteFd: number;
  /** The service's end: ends when the container does. */
  readonly exited: Promise<ContainerExit>;
}

/** Made before `runc run`; close statusFd and exitWriteFd once runc has exited. */
export async function createExitChannel(paths: BundlePaths): Promise<ExitChannel> {
  await fs.promises.rm(paths.exitFifo, { force: true });
  await execFileAsync('mkfifo', ['-m', '600', paths.exitFifo]);
  const { O_RDONLY, O_WRONLY, O_NONBLOCK, O_NOFOLLOW, O_CREAT, O_TRUNC } = fs.constants;
  const opened: number[] = [];
  try {
    const statusFd = await openFd(paths.exitStatus, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0o600);
    opened.push(statusFd);
    const readFd = await openFd(paths.exitFifo, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
    opened.push(readFd);
    const exitWriteFd = await openFd(paths.exitFifo, O_WRONLY | O_NONBLOCK | O_NOFOLLOW);
    opened.push(exitWriteFd);
    // Referenced, as a child process is: the service's own running servers keep it alive until they end.
    return { statusFd, exitWriteFd, exited: exitOf(readFd, paths.exitStatus, true) };
  } catch (err) {
    for (const fd of opened) closeQuietly(fd);
    throw err;
  }
}

/** For a container another service started (or this one before a restart): resolves when it has ended. */
export async function watchContainerExit(paths: BundlePaths): Promise<ContainerExit> {
  const { O_RDONLY, O_NONBLOCK, O_NOFOLLOW } = fs.constants;
  const readFd = await openFd(paths.exitFifo, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
  if (!fs.fstatSync(readFd).isFIFO()) {
    closeQuietly(readFd);
    throw new Error(`${paths.exitFifo} is not a FIFO`);
  }
  // Linux reports no hang-up for a FIFO that had no writer when it was opened (not until a writer comes
  // and goes), so an already-ended container would never be noticed by polling; read() tells: 0 bytes
  // is end-of-file (no writer), EAGAIN a writer that holds on. A writer there at the open is seen leaving.
  try {
    if (fs.readSync(readFd, Buffer.alloc(1)) === 0) {
      closeQuietly(readFd);
      return readExitStatus(paths.exitStatus);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') {
      closeQuietly(readFd);
      throw err;
    }
  }
  return exitOf(readFd, paths.exitStatus, false);
}

function exitOf(readFd: number, statusFile: string, keepAlive: boolean): Promise<ContainerExit> {
  const pipe = new net.Socket({ fd: readFd, readable: true, writable: false });
  // Nothing is ever written to it: the end is the message. A container the service started keeps the
  // service's event loop alive, as a child process does (a stop or kill awaits its end with nothing else
  // pending). One it merely watches (re-attached) does not: it may outlive the service, and a script that
  // only awaits it must hold the loop itself.
  if (!keepAlive) pipe.unref();
  pipe.resume();
  return new Promise((resolve) => {
    const done = () => {
      pipe.destroy();
      resolve(readExitStatus(statusFile));
    };
    pipe.once('end', done);
    pipe.once('error', done);
  });
}

/** `$?` as the shell wrote it: 128 + n for a process ended by signal n. */
export function readExitStatus(statusFile: string): ContainerExit {
  let text = '';
  try {
    text = fs.readFileSync(statusFile, 'utf8').trim();
  } catch {
    // no file: nothing recorded
  }
  if (!/^\d+$/.test(text)) return { code: null, signal: 'SIGKILL' };
  const status = Number(text);
  if (status > 128) {
    const signal = signalName(status - 128);
    if (signal !== null) return { code: null, signal };
  }
  return { code: status, signal: null };
}

function signalName(number: number): NodeJS.Signals | null {
  const entry = Object.entries(os.constants.signals).find(([, value]) => value === number);
  return entry ? (entry[0] as NodeJS.Signals) : null;
}
