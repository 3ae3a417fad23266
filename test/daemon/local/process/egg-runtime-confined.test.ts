/**
 * The egg runtime (SPEC 16) with containment on, end to end through a real
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

describe('egg runtime, confined', () => {
  it('environment, config file, starting until the done line, ^C as SIGINT, in a container', async () => {
    requireRunc();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-egg-confined-'));
    const runtime = await resolveContainment(
      { mode: 'on', uid: SERVER_UID, uidRange: null, dataDir, runDir: path.join(dataDir, 'run') },
      { warn: () => undefined },
    );
    if (runtime === null) throw new Error('containment was not resolved');
    const daemon = new LocalDaemon(dataDir, { stopGraceMs: 2_000, containers: runtime });
    await daemon.start();
    cleanups.push(async () => {
      await daemon.close();
      for (const container of await runtime.runc.list())
        await runtime.runc.delete(container.id, { force: true }).catch(() => undefined);
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

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
});
