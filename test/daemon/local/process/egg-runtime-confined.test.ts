/**
 * The egg runtime (docs/reference/eggs-and-installs.md) with containment on, end to end through a real
 * runc container: the panel's environment reaches the process beside the
 * container's own HOME, PATH, USER and P_SERVER_UUID, which it cannot
 * replace; the config file is edited through the files layer (owned by the
 * server's uid); `starting` until the done line; `^C` stops with SIGINT.
 * Needs root, runc and conmon (requireRunc): fails, saying so, without them.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveContainment } from '../../../../src/daemon/local/container/container-runtime.js';
import { LocalDaemon } from '../../../../src/daemon/local/local-daemon.js';
import { requireRunc, SERVER_UID } from '../container/helpers.js';
import { eggServer, installInto, runEggServer } from './egg-runtime-helpers.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A confined LocalDaemon on `dataDir` (a new one when absent); removed after the test with every container. */
async function confinedDaemon(options: { dataDir?: string; keep?: boolean } = {}) {
  requireRunc();
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-egg-confined-'));
  const runtime = await resolveContainment(
    { mode: 'on', uid: SERVER_UID, uidRange: null, dataDir, runDir: path.join(dataDir, 'run') },
    { warn: () => undefined },
  );
  if (runtime === null) throw new Error('containment was not resolved');
  const daemon = new LocalDaemon(dataDir, {
    stopGraceMs: 2_000,
    containers: runtime,
    serversOnShutdown: options.keep ? 'keep' : 'stop',
  });
  await daemon.start();
  cleanups.push(async () => {
    await daemon.close();
    for (const container of await runtime.runc.list())
      await runtime.runc.delete(container.id, { force: true }).catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return { daemon, dataDir };
}

describe('egg runtime, confined', () => {
  it('environment, config file, starting until the done line, ^C as SIGINT, in a container', async () => {
    const { daemon } = await confinedDaemon();
    const server = eggServer();
    installInto(daemon.volumeDir(server.uuid));
    const env = await runEggServer(daemon, server);
    expect(env).toEqual({
      SERVER_PORT: '25600',
      EGG_VAR: 'hello world',
      HOME: '/home/container',
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      USER: 'container',
      P_SERVER_UUID: server.uuid,
    });
    const file = path.join(daemon.volumeDir(server.uuid), 'server.properties');
    expect(fs.readFileSync(file, 'utf8')).toBe('#generated\nserver-port=25600\nmotd=hi\n');
    // Written by the daemon for the server: its uid's, as everything in a confined volume.
    expect(fs.statSync(file).uid).toBe(SERVER_UID);
  });

  it('a server still starting is left running by a service that keeps its servers; the next service has it running', async () => {
    const first = await confinedDaemon({ keep: true });
    const server = eggServer({ doneLines: ['never printed'] });
    installInto(first.daemon.volumeDir(server.uuid));
    await first.daemon.power(server, 'start');
    expect(await first.daemon.state(server)).toBe('starting');
    await first.daemon.close(); // SERVERS_ON_SHUTDOWN=keep: the container outlives the service

    const second = await confinedDaemon({ dataDir: first.dataDir, keep: false });
    // Nothing on disk says `starting`: whoever finds it running says so (docs/reference/power-and-console.md#servers-outlive-the-service's adoption included).
    expect(await second.daemon.state(server)).toBe('running');
    await second.daemon.power(server, 'stop');
    expect(await second.daemon.state(server)).toBe('offline');
  });
});
