/**
 * The daemon's installs (docs/reference/eggs-and-installs.md) in their runc box, whatever CONTAINMENT the
 * run has (local-installer.test.ts follows it): the install runs in the
 * server's own network namespace, and a start leaves another live instance's
 * install alone and sweeps a dead one's.
 */
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveContainment, type ContainerRuntime } from '../../src/daemon/local/container/container-runtime.js';
import { LocalDaemon } from '../../src/daemon/local/local-daemon.js';
import type { DaemonServer } from '../../src/daemon/daemon.js';
import { script } from './install-script.js';
import { readProcStatSync } from '../../src/daemon/local/process/proc.js';
import { requireRunc, SERVER_UID } from '../daemon/local/container/helpers.js';

let dataDir: string;
let daemon: LocalDaemon;
let containers: ContainerRuntime;

beforeAll(async () => {
  requireRunc();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-confined-installer-'));
  const resolved = await resolveContainment(
    { mode: 'on', uid: SERVER_UID, dataDir, runDir: path.join(dataDir, 'run') },
    { warn: () => undefined },
  );
  if (resolved === null) throw new Error('containment was not resolved');
  containers = resolved;
  daemon = new LocalDaemon(dataDir, { containers });
  await daemon.start();
});

afterAll(async () => {
  await daemon?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const newServer = (slot: number): DaemonServer => ({ uuid: randomUUID(), startup: null, stopCommand: null, uidSlot: slot });

describe('LocalInstaller, confined', () => {
  it("runs confined in the server's own network namespace, removed after", async () => {
    const server = newServer(4);
    const namespace = containers.network.namespaceName(server.uuid);
    let seenInode = 0;
    const lines: string[] = [];
    const outcome = await daemon.install(
      server,
      script('readlink /proc/self/ns/net; cat /proc/net/route', { entrypoint: 'sh' }),
      (line) => {
        lines.push(line);
        // While it runs, the namespace the server will have exists.
        if (seenInode === 0) seenInode = fs.statSync(`/run/netns/${namespace}`, { throwIfNoEntry: false })?.ino ?? -1;
      },
    );
    expect(outcome).toEqual({ exitCode: 0 });
    expect(lines[0]).toBe(`net:[${seenInode}]`);
    expect(lines[0]).not.toBe(fs.readlinkSync('/proc/self/ns/net'));
    // Routed out: a default route (destination 00000000) through its own end of the pair.
    expect(lines.some((line) => /^eth0\s+00000000\s/.test(line))).toBe(true);
    expect(fs.existsSync(`/run/netns/${namespace}`)).toBe(false);
  }, 60_000);

  it("leaves a live other instance's install alone at start: its network stays, abort refuses; a dead one's is swept", async () => {
    const server = newServer(5);
    const namespace = containers.network.namespaceName(server.uuid);
    await containers.network.attach(server.uuid, []);
    // Another instance (a `server:reinstall` command) that runs the install: a live process of its own.
    const other = spawn('sleep', ['60'], { stdio: 'ignore' });
    const record = path.join(dataDir, 'run', 'installs', `${server.uuid}.owner`);
    fs.mkdirSync(path.dirname(record), { recursive: true });
    const owner = {
      pid: other.pid,
      startTime: readProcStatSync(other.pid!)!.startTime,
      bootId: fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
    };
    fs.writeFileSync(record, JSON.stringify({ owner, box: `qzinstall-${server.uuid}` }));
    const restarted = new LocalDaemon(dataDir, { containers });
    try {
      await restarted.start();
      expect(fs.existsSync(`/run/netns/${namespace}`)).toBe(true);
      expect(await restarted.installRunning(server)).toBe(true);
      await expect(restarted.abortInstall(server)).rejects.toThrow(/another instance/);
      other.kill('SIGKILL');
      await new Promise((resolve) => other.once('exit', resolve));
      expect(await restarted.installRunning(server)).toBe(false);
    } finally {
      other.kill('SIGKILL');
    }
    // That instance is gone: the next start sweeps the network, and abort clears the rest.
    const next = new LocalDaemon(dataDir, { containers });
    await next.start();
    expect(fs.existsSync(`/run/netns/${namespace}`)).toBe(false);
    await next.abortInstall(server, 'the service stopped during the install');
    expect(fs.existsSync(record)).toBe(false);
    expect((await next.installLog(server, 1))[0]).toBe('[Quetzal] the install failed: the service stopped during the install');
  }, 60_000);
});
