/**
 * A container's standard input: a FIFO in its bundle folder, which stays
 * there for the container's life so that a restarted service can open it
 * again by path (the container's processes cannot see the bundle folder).
 *
 * The container also gets a write end of its own (as descriptor 3), so that
 * its standard input never reads end-of-file while no service holds the
 * FIFO open: a server that treats EOF as "no more console" keeps its console
 * across a service restart.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const openFd = promisify(fs.open);

export interface StdinFifo {
  /** For `runc run`: the container's standard input. Close it once runc has exited. */
  readonly readFd: number;
  /** For `runc run` (as the container's descriptor 3). Close it once runc has exited. */
  readonly keepOpenFd: number;
  /** The service's end. */
  readonly writer: net.Socket;
}

export async function createStdinFifo(fifoPath: string): Promise<StdinFifo> {
  await fs.promises.rm(fifoPath, { force: true });
  await execFileAsync('mkfifo', ['-m', '600', fifoPath]);
  const { O_RDONLY, O_WRONLY, O_NONBLOCK, O_NOFOLLOW } = fs.constants;
  const opened: number[] = [];
  try {
    // Each open finds the other end already open, so none of them waits.
    const probe = await openFd(fifoPath, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
    opened.push(probe);
    const writeFd = await openFd(fifoPath, O_WRONLY | O_NONBLOCK | O_NOFOLLOW);
    opened.push(writeFd);
    const readFd = await openFd(fifoPath, O_RDONLY | O_NOFOLLOW);
    opened.push(readFd);
    const keepOpenFd = await openFd(fifoPath, O_WRONLY | O_NOFOLLOW);
    opened.push(keepOpenFd);
    fs.closeSync(probe);
    return { readFd, keepOpenFd, writer: new net.Socket({ fd: writeFd, readable: false, writable: true }) };
  } catch (err) {
    for (const fd of opened) closeQuietly(fd);
    throw err;
  }
}

/**
 * Opens a running container's FIFO again (after a service restart). Fails
 * with ENXIO when nothing reads it any more: the container is gone.
 */
export async function openStdinWriter(fifoPath: string): Promise<net.Socket> {
  const { O_WRONLY, O_NONBLOCK, O_NOFOLLOW, O_NOCTTY } = fs.constants;
  const fd = await openFd(fifoPath, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY);
  if (!fs.fstatSync(fd).isFIFO()) {
    closeQuietly(fd);
    throw new Error(`${fifoPath} is not a FIFO`);
  }
  return new net.Socket({ fd, readable: false, writable: true });
}

export function closeQuietly(fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    // already closed
  }
}
