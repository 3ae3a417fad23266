/**
 * The daemon's installs (docs/reference/eggs-and-installs.md) on a real LocalDaemon: with CONTAINMENT=on
 * (root, runc) the script runs in its own runc box as the server's uid, the
 * volume at /mnt/server; unconfined, as a child process with /mnt/server
 * replaced by the volume's path. Output reaches the caller and the install
 * log; a failing script gives its exit code; a leftover box is aborted.
 */
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalDaemon } from '../../src/daemon/local/local-daemon.js';
import type { DaemonServer } from '../../src/daemon/daemon.js';
import { script } from './install-script.js';
import { testContainment } from '../helpers/containment.js';

/** An egg-like script: writes a small server program into /mnt/server, says so, uses its variable. */
export const WRITE_PROGRAM = [
  '#!/bin/ash',
  'set -e',
  'cd /mnt/server',
  'echo "installing version ${VERSION}"',
  'printf \'console.log("hello from the installed server");\\n\' > server.mjs',
  'mkdir -p config && echo "version=${VERSION}" > config/version.txt',
  'echo "cwd=$(pwd) home=$HOME uid=$(id -u)"',
  'echo "done"',
].join('\r\n');

let dataDir: string;
let daemon: LocalDaemon;
let confined: boolean;
let containers: Awaited<ReturnType<typeof testContainment>>;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-installer-'));
  containers = await testContainment(dataDir);
  confined = containers !== null;
  daemon = new LocalDaemon(dataDir, { containers });
  await daemon.start();
});

afterAll(async () => {
  await daemon.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const newServer = (slot: number): DaemonServer => ({ uuid: randomUUID(), startup: null, stopCommand: null, uidSlot: slot });

describe('LocalInstaller', () => {
  it('runs the script against the volume, streams its lines and keeps them in the install log', async () => {
    const server = newServer(1);
    const lines: string[] = [];
    const outcome = await daemon.install(server, script(WRITE_PROGRAM), (line) => lines.push(line));
    expect(outcome).toEqual({ exitCode: 0 });
    expect(lines[0]).toMatch(/not in this image|not on this machine|installing version 1.2.3/);
    expect(lines).toContain('installing version 1.2.3');
    expect(lines).toContain('done');
    const volume = daemon.volumeDir(server.uuid);
    expect(fs.readFileSync(path.join(volume, 'server.mjs'), 'utf8')).toContain('hello from the installed server');
    expect(fs.readFileSync(path.join(volume, 'config/version.txt'), 'utf8')).toBe('version=1.2.3\n');
    const log = await daemon.installLog(server, 100);
    expect(log.slice(0, -1)).toEqual(lines);
    expect(log.at(-1)).toBe('[Quetzal] the install script exited with code 0');
    expect(await daemon.installLog(server, 2)).toEqual(['done', '[Quetzal] the install script exited with code 0']);
    if (confined) {
      // The server's own uid, in its box: the volume at /mnt/server, its working folder and HOME.
      const uid = fs.statSync(volume).uid;
      expect(uid).not.toBe(0);
      for (const file of ['server.mjs', 'config', 'config/version.txt'])
        expect(fs.statSync(path.join(volume, file)).uid).toBe(uid);
      expect(lines).toContain(`cwd=/mnt/server home=/mnt/server uid=${uid}`);
      expect(execFileSync('runc', ['--root', path.join(dataDir, 'run/runc'), 'list', '-q'], { encoding: 'utf8' })).not.toContain(
        server.uuid,
      );
    } else {
      expect(lines).toContain(`cwd=${fs.realpathSync(volume)} home=${fs.realpathSync(volume)} uid=${process.getuid!()}`);
    }
    expect(await daemon.installRunning(server)).toBe(false);
  }, 60_000);

  it('gives a failing script its exit code, and a new install empties the log', async () => {
    const server = newServer(2);
    expect(await daemon.install(server, script('echo first'), () => undefined)).toEqual({ exitCode: 0 });
    const lines: string[] = [];
    const outcome = await daemon.install(server, script('echo "about to fail" >&2\nexit 3', { entrypoint: 'sh' }), (line) =>
      lines.push(line),
    );
    expect(outcome).toEqual({ exitCode: 3 });
    expect(lines).toEqual(['about to fail']);
    expect(await daemon.installLog(server, 10)).toEqual(['about to fail', '[Quetzal] the install script exited with code 3']);
  }, 60_000);

  it('refuses a second install of the same server while one runs, and abort ends the running one', async () => {
    const server = newServer(3);
    const lines: string[] = [];
    const first = daemon.install(server, script('echo started; sleep 30; echo never'), (line) => lines.push(line));
    await waitUntil(() => lines.includes('started'));
    expect(await daemon.installRunning(server)).toBe(true);
    await expect(daemon.install(server, script('true'), () => undefined)).rejects.toThrow(/already running/);
    // The server cannot start beside its install (a schedule's power task that raced the claim).
    await expect(daemon.power({ ...server, startup: 'sleep 30' }, 'start')).rejects.toThrow(/being installed/);
    await daemon.abortInstall(server);
    const outcome = await first;
    expect(outcome.exitCode).not.toBe(0);
    expect(lines).not.toContain('never');
    expect(await daemon.installRunning(server)).toBe(false);
  }, 60_000);
});

async function waitUntil(check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
