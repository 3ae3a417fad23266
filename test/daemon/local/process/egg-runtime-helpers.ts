/**
 * What the egg runtime tests (docs/reference/eggs-and-installs.md) share, confined or not: a stand-in
 * game server written into the volume (as an install would leave it), the
 * DaemonServer a panel hands over for it, and a run through a real
 * LocalDaemon: environment, config file, done line, `^C` stop.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import type { DaemonServer, ServerState } from '../../../../src/daemon/daemon.js';
import type { LocalDaemon } from '../../../../src/daemon/local/local-daemon.js';

/** Prints its environment and config, `booting`, then its done line when told `finish`; says which signal stopped it. */
const GAME_SERVER = `
const fs = require('node:fs');
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => { console.log(signal + ' received'); process.exit(0); });
const env = {};
for (const name of ['SERVER_IP', 'SERVER_PORT', 'EGG_VAR', 'HOME', 'PATH', 'USER', 'P_SERVER_UUID']) env[name] = process.env[name];
console.log('env ' + JSON.stringify(env));
console.log('config ' + fs.readFileSync('server.properties', 'utf8').split('\\n').find((l) => l.startsWith('server-port')));
console.log('booting');
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  console.log(line === 'finish' ? 'Done (1.52s)! For help, type "help"' : '> ' + line);
});
`;

/** The server as the panel hands it over: the egg's environment (trying to replace what it may not), done lines, config file, stop. */
export function eggServer(overrides: Partial<DaemonServer> = {}): DaemonServer {
  return {
    uuid: randomUUID(),
    startup: 'node server.cjs',
    stopCommand: '^C',
    environment: {
      SERVER_PORT: '25600',
      EGG_VAR: 'hello world',
      HOME: '/forged-home',
      PATH: '/forged-path',
      USER: 'forged',
      P_SERVER_UUID: 'forged',
    },
    doneLines: ['never printed', 'regex:^Done \\(\\d+\\.\\d+s\\)!'],
    configFiles: [{ file: 'server.properties', parser: 'properties', find: { 'server-port': '25600' } }],
    ...overrides,
  };
}

/** Writes the stand-in server and its config into a volume that does not exist yet. */
export function installInto(volumeDir: string): void {
  fs.mkdirSync(volumeDir, { recursive: true });
  fs.writeFileSync(path.join(volumeDir, 'server.cjs'), GAME_SERVER);
  fs.writeFileSync(path.join(volumeDir, 'server.properties'), '#generated\nserver-port=1\nmotd=hi\n');
}

async function waitUntil(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Starts the server, checks it stays `starting` while it prints other lines,
 * lets it print its done line, checks `running` (events in order), then its
 * environment and config as seen from inside, then stops it with `^C`.
 * Returns the environment the process saw.
 */
export async function runEggServer(daemon: LocalDaemon, server: DaemonServer): Promise<Record<string, string | undefined>> {
  const states: ServerState[] = [];
  daemon.onStateChange((uuid, state) => {
    if (uuid === server.uuid) states.push(state);
  });
  const console_ = async () => (await daemon.consoleHistory(server, 200)).join('\n');
  await daemon.power(server, 'start');
  await waitUntil(async () => (await console_()).includes('booting'), 'the server to boot');
  // Lines that are not done lines come and go: still starting.
  await daemon.sendCommand(server, 'ping');
  await waitUntil(async () => (await console_()).includes('> ping'), 'the echo of a command');
  await new Promise((resolve) => setTimeout(resolve, 200)); // the console's readers have seen it too
  expect(await daemon.state(server)).toBe('starting');
  expect(states).toEqual(['starting']);

  await daemon.sendCommand(server, 'finish');
  await waitUntil(async () => (await daemon.state(server)) === 'running', 'running after the done line');
  expect(states).toEqual(['starting', 'running']);

  const lines = await console_();
  const envLine = /^env (.*)$/m.exec(lines)?.[1];
  expect(envLine, lines).toBeDefined();
  expect(lines).toContain('config server-port=25600');

  await daemon.power(server, 'stop');
  expect(await daemon.state(server)).toBe('offline');
  expect(await console_()).toContain('SIGINT received');
  expect(states).toEqual(['starting', 'running', 'stopping', 'offline']);
  return JSON.parse(envLine!) as Record<string, string | undefined>;
}
