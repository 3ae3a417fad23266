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
import { promisify } from 'node:util';
import { randomToken } from './helpers.js';
import { leaderStatus, type RecordedGroup } from './process-group.js';
import type { ProcessLogger } from './supervisor-options.js';

const execFileAsync = promisify(execFile);
const openFd = promisify(fsSync.open);

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
 * reading) is an error, not a hang. Refuses anything but a pipe.
 */
export async function writeToConsole(record: RecordedGroup, line: string): Promise<void> {
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
    for (let offset = 0; offset < data.length;) {
      const { bytesWritten } = await handle.write(data, offset, data.length - offset);
      if (bytesWritten <= 0) throw new Error('the console pipe takes nothing');
      offset += bytesWritten;
    }
  } finally {
    await handle.close();
  }
}
