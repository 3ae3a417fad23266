/**
 * Running a server's startup command: `/bin/sh -c` in its volume folder, as
 * the leader of a new process group, with a minimal environment. This and
 * process-group.ts are where the supervisor touches the operating system's
 * processes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import { noop } from './helpers.js';
import type { LaunchTarget } from './launcher.js';
import { serverExtraEnv } from './server-env.js';

/**
 * The environment a server process gets: only what a command needs to be found
 * and run. The service's own environment (DATABASE_URL and the like) is none of
 * a game server's business; P_SERVER_UUID is what Pterodactyl's containers set.
 */
const INHERITED_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR'];

/**
 * `/bin/sh -c <startup>` in the volume folder, as the leader of a new process
 * group, with stdin read from `stdinFd` (Node's pipe without one) and stdout
 * and stderr both going to the (append-mode) log file descriptor. May throw
 * synchronously; usually reports failure as an 'error' event.
 */
export function spawnServerProcess(
  target: LaunchTarget,
  startup: string,
  stdinFd: number | undefined,
  logFd: number,
): ChildProcess {
  return spawn(startup, {
    shell: true,
    cwd: target.volumeDir,
    detached: true,
    stdio: [stdinFd ?? 'pipe', logFd, logFd],
    // The panel's variables over the inherited ones; serverExtraEnv never carries PATH, HOME, USER or P_SERVER_UUID.
    env: { ...serverEnvironment(target.uuid), ...serverExtraEnv(target.allocations, target.environment) },
  });
}

function serverEnvironment(serverUuid: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { P_SERVER_UUID: serverUuid };
  for (const name of INHERITED_ENV) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** Resolves on 'spawn', rejects on an 'error' that comes first. Marked handled: it may be awaited only later. */
export function whenSpawned(child: ChildProcess): Promise<void> {
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  spawned.catch(noop);
  return spawned;
}

/** Checked up front because spawn reports a missing cwd as "spawn /bin/sh ENOENT", which points at the wrong thing. */
export async function assertDirectory(dir: string, serverUuid: string): Promise<void> {
  const stats = await fs.stat(dir).catch(() => null);
  if (!stats?.isDirectory()) throw new Error(`Could not start server ${serverUuid}: its volume folder ${dir} does not exist.`);
}
