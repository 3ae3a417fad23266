/**
 * A server's console: its standard input. Ours is a FIFO we hold the write end
 * of; another instance's is reached through /proc/<pid>/fd/0 of its group
 * leader, which opens the very same pipe.
 */
import { execFile } from 'node:child_process';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { ConsoleBusyError } from './errors.js';
import { errnoCode, randomToken } from './helpers.js';
import { leaderStatus, type RecordedGroup } from './process-group.js';
import type { ProcessLogger } from './supervisor-options.js';

const execFileAsync = promisify(execFile);
const openFd = promisify(fsSync.open);

/**
 * At most this much console input waits for a server (docs/reference/backups-and-restores.md#durability): in the pipe
 * and in our memory together. Linux gives a pipe 64 KiB; our writer only
 * keeps bytes in memory once the pipe is full, so what waits is the pipe's
 * capacity plus the writer's queue.
 */
export const CONSOLE_BACKLOG_LIMIT = 1024 * 1024;
const PIPE_CAPACITY = 64 * 1024;
/** How long the rest of a line longer than PIPE_BUF, cut by a full pipe, may wait for room. */
const PARTIAL_LINE_WAIT_MS = 2_000;

/**
 * Bytes waiting for the process to read, reckoned from above: the pipe counts
 * as full (64 KiB) whenever the writer queues (it only queues once the kernel
 * refused more; the kernel fills a pipe page by page, so it may hold less),
 * plus the writer's queue.
 */
export function consoleBacklog(stdin: Writable): number {
  return stdin.writableLength === 0 ? 0 : PIPE_CAPACITY + stdin.writableLength;
}

/**
 * Queues a console line on our end of the process's standard input, unless
 * the line would make more than CONSOLE_BACKLOG_LIMIT wait (a process that
 * does not read its console must not make us buffer without end). Not waiting
 * for the flush: such a process must not hang the caller either.
 */
export function queueConsoleLine(stdin: Writable, serverUuid: string, line: string): void {
  const data = Buffer.from(`${line}\n`);
  if (PIPE_CAPACITY + stdin.writableLength + data.length > CONSOLE_BACKLOG_LIMIT) throw new ConsoleBusyError(serverUuid);
  stdin.write(data);
}

/** Our end of a server's console pipe; the read end goes to the child and is then closed here. */
export interface StdinPipe {
  readFd: number;
  writer: net.Socket;
}

/**
 * A pipe for the process's standard input: a FIFO, opened at both ends and
 * unlinked at once, so that other instances can open it through
 * /proc/<pid>/fd/0 (Node's own stdio pipe is a socket pair, which cannot be
 * opened that way). Null (and Node's pipe is used) when no FIFO can be made.
 */
export async function openStdinPipe(runDir: string, serverUuid: string, log: ProcessLogger): Promise<StdinPipe | null> {
  const fifo = path.join(runDir, `${serverUuid}.${randomToken()}.fifo`);
  try {
    await execFileAsync('mkfifo', ['-m', '600', fifo]);
  } catch (err) {
    log.warn({ err, serverUuid }, "could not create a console pipe; other instances cannot write to this server's console");
    return null;
  }
  const { O_RDONLY, O_WRONLY, O_NONBLOCK } = fsSync.constants;
  const opened: number[] = [];
  try {
    // Each open below finds the other end already open, so none of them waits.
    const probe = await openFd(fifo, O_RDONLY | O_NONBLOCK);
    opened.push(probe);
    const writeFd = await openFd(fifo, O_WRONLY | O_NONBLOCK);
    opened.push(writeFd);
    const readFd = await openFd(fifo, O_RDONLY); // blocking: the server reads it
    opened.push(readFd);
    closeQuietly(probe);
    return { readFd, writer: new net.Socket({ fd: writeFd, readable: false, writable: true }) };
  } catch (err) {
    for (const fd of opened) closeQuietly(fd);
    log.warn({ err, serverUuid }, "could not open a console pipe; other instances cannot write to this server's console");
    return null;
  } finally {
    await fs.rm(fifo, { force: true });
  }
}

export function closeStdinPipe(pipe: StdinPipe | null): void {
  if (!pipe) return;
  closeQuietly(pipe.readFd);
  pipe.writer.destroy();
}

export function closeQuietly(fd: number): void {
  try {
    fsSync.closeSync(fd);
  } catch {
    // already closed
  }
}

/**
 * Writes a console line to the standard input of a process another instance
 * started: opening /proc/<pid>/fd/0 of its group leader opens the very pipe
 * its owner writes to. Non-blocking: a full pipe (a server that stopped
 * reading) is a ConsoleBusyError, not a hang. Refuses anything but a pipe.
 */
export async function writeToConsole(record: RecordedGroup, serverUuid: string, line: string): Promise<void> {
  if (leaderStatus(record) !== 'alive') throw new Error('the process that reads the console is gone');
  const stdin = `/proc/${record.pid}/fd/0`;
  if (!(await fs.stat(stdin)).isFIFO()) throw new Error('its standard input is not a pipe');
  const { O_WRONLY, O_NONBLOCK, O_NOCTTY } = fsSync.constants;
  const handle = await fs.open(stdin, O_WRONLY | O_NONBLOCK | O_NOCTTY);
  try {
    if (!(await handle.stat()).isFIFO()) throw new Error('its standard input is not a pipe');
    // The pid might have been recycled between the check and the open.
    if (leaderStatus(record) !== 'alive') throw new Error('the process that reads the console is gone');
    const data = Buffer.from(`${line}\n`);
    const deadline = Date.now() + PARTIAL_LINE_WAIT_MS;
    for (let offset = 0; offset < data.length;) {
      let bytesWritten = 0;
      try {
        ({ bytesWritten } = await handle.write(data, offset, data.length - offset));
      } catch (err) {
        if (errnoCode(err) !== 'EAGAIN') throw err;
      }
      if (bytesWritten > 0) {
        offset += bytesWritten;
        continue;
      }
      // A full pipe: the process does not read its console. A line of up to PIPE_BUF (4 KiB) is written
      // whole or not at all; only a longer one can be cut, and its rest is given a moment to fit.
      if (offset === 0 || Date.now() > deadline) throw new ConsoleBusyError(serverUuid);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } finally {
    await handle.close();
  }
}
