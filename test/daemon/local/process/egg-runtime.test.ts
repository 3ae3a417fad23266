/**
 * The egg runtime (docs/reference/eggs-and-installs.md) in an unconfined LocalDaemon, with real
 * processes: the panel's environment reaches the process (never replacing
 * HOME, PATH, USER or P_SERVER_UUID; the allocation's SERVER_IP as the
 * fallback), the config file is edited before the start, the state moves
 * from `starting` to `running` only when the done line is printed, and `^C`
 * stops it with SIGINT. test/daemon/local/process/egg-runtime-confined.test.ts
 * does the same in a container.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalDaemon } from '../../../../src/daemon/local/local-daemon.js';
import { eggServer, installInto, runEggServer } from './egg-runtime-helpers.js';

let dataDir: string;
let daemon: LocalDaemon;
beforeEach(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-egg-runtime-'));
  daemon = new LocalDaemon(dataDir, { stopGraceMs: 2_000 });
  await daemon.start();
});
afterEach(async () => {
  await daemon.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('egg runtime, unconfined', () => {
  it('environment, config file, starting until the done line, ^C as SIGINT', async () => {
    const server = eggServer({ allocations: [{ ip: '127.0.0.1', port: 25565 }] });
    installInto(daemon.volumeDir(server.uuid));
    const env = await runEggServer(daemon, server);
    expect(env).toEqual({
      SERVER_IP: '127.0.0.1', // from the allocation: the environment has none
      SERVER_PORT: '25600', // the environment's, over the allocation's
      EGG_VAR: 'hello world',
      HOME: process.env.HOME,
      PATH: process.env.PATH,
      USER: process.env.USER,
      P_SERVER_UUID: server.uuid,
    });
    expect(fs.readFileSync(path.join(daemon.volumeDir(server.uuid), 'server.properties'), 'utf8')).toBe(
      '#generated\nserver-port=25600\nmotd=hi\n',
    );
  });

  it('is running when its done line is the first thing it prints, and at once without done lines', async () => {
    const states: string[] = [];
    daemon.onStateChange((_uuid, state) => states.push(state));
    const quick = eggServer({
      startup: 'echo "Server started"; exec sleep 1000',
      doneLines: ['Server started'],
      configFiles: [],
    });
    await daemon.power(quick, 'start');
    const deadline = Date.now() + 10_000;
    while ((await daemon.state(quick)) !== 'running' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(await daemon.state(quick)).toBe('running');
    await daemon.power(quick, 'kill');

    states.length = 0;
    const plain = eggServer({ startup: 'exec sleep 1000', doneLines: [], configFiles: [] });
    await daemon.power(plain, 'start');
    expect(await daemon.state(plain)).toBe('running');
    expect(states).toEqual(['starting', 'running']);
    await daemon.power(plain, 'kill');
  });

  it('a restart edits the config files again after the stop (where a server saves its own), before the new process', async () => {
    const server = eggServer({
      // Like a game server saving its settings as it shuts down.
      startup: `trap 'echo server-port=9 > server.properties; exit 0' TERM; echo up; while :; do sleep 0.05; done`,
      stopCommand: null,
      doneLines: ['up'],
    });
    installInto(daemon.volumeDir(server.uuid));
    // Running once `up` is printed: its trap is set by then.
    const running = async () => {
      const deadline = Date.now() + 10_000;
      while ((await daemon.state(server)) !== 'running' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(await daemon.state(server)).toBe('running');
    };
    await daemon.power(server, 'start');
    await running();
    const file = path.join(daemon.volumeDir(server.uuid), 'server.properties');
    expect(fs.readFileSync(file, 'utf8')).toContain('server-port=25600');
    await daemon.power(server, 'restart');
    expect(fs.readFileSync(file, 'utf8')).toBe('server-port=25600\n');
    await running();
    await daemon.power(server, 'stop');
    expect(fs.readFileSync(file, 'utf8')).toBe('server-port=9\n'); // the trap ran: it is what a restart undid
  });
});
