/**
 * How the service learns that a container ended, and how (docs/reference/power-and-console.md#servers-outlive-the-service: from the
 * monitor, never from a file a server can reach). conmon (conmon.ts) waits
 * for the container's first process as its subreaper and, once it has ended,
 * writes its exit status to `<exit dir>/<container id>` (a temporary file
 * renamed into place: never half a number) and exits. The exit folder is
 * under DATA_DIR/run (0700): nothing in a box sees it or holds a descriptor
 * of it.
 *
 * One watch (inotify) on the exit folder notices the file within
 * milliseconds; a poll every second covers a missed event (one stat per
 * container), and every fifth poll a conmon that died without writing it
 * (SIGKILLed by someone: the server then has no monitor, and its exit reads
 * as SIGKILL; its pid read once, its /proc entry then).
 *
 * A restarted service watches an adopted container the same way: the file
 * stays until the container is removed (`removeServerContainer`), so an end
 * that happened while no service ran is read at once.
 */
import fs from 'node:fs';
import os from 'node:os';
import { conmonAlive, exitFile, readConmonPid } from './conmon.js';

const POLL_MS = 1_000;
/** Every this many polls, whether conmon still lives. */
const MONITOR_CHECK_EVERY = 5;

export interface ContainerExit {
  /** The startup command's exit code; null when a signal ended it, or when nothing was recorded. */
  readonly code: number | null;
  /** The signal that ended it; SIGKILL too when the first process itself was killed (nothing recorded). */
  readonly signal: NodeJS.Signals | null;
}

export interface ExitWatch {
  /** Settles when the container has ended; never rejects. */
  readonly exited: Promise<ContainerExit>;
  /** Stops watching (the service leaves the container running): `exited` then never settles. */
  detach(): void;
}

interface Watched {
  readonly exitDir: string;
  readonly file: string;
  readonly conmonPidFile: string;
  readonly keepAlive: boolean;
  /** conmon's pid, once read (null: not known yet). */
  conmonPid: number | null;
  resolve(exit: ContainerExit): void;
}

/** Every container being watched, by exit file; one folder watch and one timer for all. */
const watched = new Map<string, Watched>();
const folderWatches = new Map<string, fs.FSWatcher>();
let pollTimer: NodeJS.Timeout | null = null;
let polls = 0;

/**
 * Watches the container `id` whose conmon wrote `conmonPidFile`.
 * `keepAlive`: a container this service started keeps the event loop alive
 * as a child process would; an adopted one does not.
 */
export function watchContainerExit(exitDir: string, id: string, conmonPidFile: string, keepAlive: boolean): ExitWatch {
  const file = exitFile(exitDir, id);
  let entry: Watched | undefined;
  const exited = new Promise<ContainerExit>((resolve) => {
    entry = { exitDir, file, conmonPidFile, keepAlive, conmonPid: null, resolve };
  });
  const self = entry!;
  watched.set(file, self);
  watchFolder(exitDir);
  schedulePoll();
  check(self, true);
  return {
    exited,
    detach: () => forget(self),
  };
}

function watchFolder(exitDir: string): void {
  if (folderWatches.has(exitDir)) return;
  try {
    const watch = fs.watch(exitDir, { persistent: false }, () => {
      for (const entry of [...watched.values()]) if (entry.exitDir === exitDir) check(entry, false);
    });
    watch.on('error', () => {
      watch.close();
      folderWatches.delete(exitDir);
    });
    folderWatches.set(exitDir, watch);
  } catch {
    // No inotify watch left: the poll alone.
  }
}

function schedulePoll(): void {
  if (watched.size === 0) {
    if (pollTimer) clearInterval(pollTimer);
    pollTimer = null;
    for (const watch of folderWatches.values()) watch.close();
    folderWatches.clear();
    return;
  }
  pollTimer ??= setInterval(() => {
    polls += 1;
    for (const entry of [...watched.values()]) check(entry, polls % MONITOR_CHECK_EVERY === 0);
  }, POLL_MS);
  if ([...watched.values()].some((entry) => entry.keepAlive)) pollTimer.ref();
  else pollTimer.unref();
}

function check(entry: Watched, monitorToo: boolean): void {
  if (watched.get(entry.file) !== entry) return;
  let status = readExitFile(entry.file);
  // conmon writes the file before it exits: gone without one, it died first (read once more: it may have just written it).
  if (status === undefined && monitorToo && !monitorAlive(entry)) status = readExitFile(entry.file) ?? null;
  if (status === undefined) return;
  forget(entry);
  entry.resolve(exitOfStatus(status));
}

/** No longer watched: its folder's watch goes too, unless another entry shares the folder. */
function forget(entry: Watched): void {
  if (watched.get(entry.file) === entry) watched.delete(entry.file);
  if (![...watched.values()].some((other) => other.exitDir === entry.exitDir)) {
    folderWatches.get(entry.exitDir)?.close();
    folderWatches.delete(entry.exitDir);
  }
  schedulePoll();
}

function monitorAlive(entry: Watched): boolean {
  entry.conmonPid ??= readConmonPid(entry.conmonPidFile);
  return entry.conmonPid !== null && conmonAlive(entry.conmonPid);
}

/** The recorded status; null for a file that is not a number; undefined when there is none yet. */
function readExitFile(file: string): number | null | undefined {
  // Most polls find nothing: one stat, not an open that fails.
  if (!fs.existsSync(file)) return undefined;
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
  return /^\d+$/.test(text) ? Number(text) : null;
}

/** A status as conmon records it (`$?`'s convention: 128 + n for a process ended by signal n); null = nothing recorded. */
export function exitOfStatus(status: number | null): ContainerExit {
  if (status === null) return { code: null, signal: 'SIGKILL' };
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
