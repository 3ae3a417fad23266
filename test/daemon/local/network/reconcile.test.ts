/**
 * What a SIGKILL of the service leaves of server networks, and what the next
 * start makes of it (docs/CONTAINMENT.md): the dead instance's server is
 * adopted with its network published exactly once (docs/reference/power-and-console.md#servers-outlive-the-service), and a kill then
 * removes its namespace, veth, record and published ports; leftovers from a crash halfway through an attach (a namespace with no
 * record, a record with no server) are removed; nothing is duplicated and a
 * new start publishes the server once.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  ECHO_TENANT,
  eventually,
  networkDaemon,
  nftTable,
  onCleanup,
  randomPort,
  reapDataDir,
  server,
  tcpAsk,
  volumeFile,
} from './helpers.js';

const HOST_SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'network-daemon-host.ts');

function namespaces(): string[] {
  return execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.split(' ')[0]!)
    .filter(Boolean);
}

describe('server networks after a crash of the service', () => {
  it("a SIGKILLed instance's server is adopted by the next start with its network published once; a kill removes it, and a new start publishes it once", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-net-crash-'));
    const port = randomPort();
    const target = server('exec python3 tenant.py', [{ ip: '0.0.0.0', port }]);
    fs.mkdirSync(path.join(dataDir, 'volumes', target.uuid), { recursive: true });
    for (const [name, content] of Object.entries({ 'tenant.py': ECHO_TENANT, 'name.txt': 'crashed' })) {
      fs.writeFileSync(path.join(dataDir, 'volumes', target.uuid, name), content);
    }
    const child = spawn(process.execPath, ['--import', 'tsx', HOST_SCRIPT, dataDir, JSON.stringify(target)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    onCleanup(async () => {
      child.kill('SIGKILL');
      // Whatever the test got to: the killed instance's server goes as a next start would take it.
      await reapDataDir(dataDir);
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('started') && resolve());
      child.once('exit', (code) => reject(new Error(`the instance exited (${code}) before starting its server`)));
    });
    await eventually(() => fs.existsSync(path.join(dataDir, 'volumes', target.uuid, 'ready')), 15_000, 'the server to listen');
    expect((await tcpAsk('127.0.0.1', port)).startsWith('crashed ')).toBe(true);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    // The server outlives the service, still published.
    expect((await tcpAsk('127.0.0.1', port)).startsWith('crashed ')).toBe(true);

    const { daemon, runtime } = await networkDaemon(dataDir);
    // Adopted (docs/reference/power-and-console.md#servers-outlive-the-service): still running and published, exactly once, its namespace and record kept.
    expect(await daemon.state(target)).toBe('running');
    expect((await tcpAsk('127.0.0.1', port)).startsWith('crashed ')).toBe(true);
    expect(namespaces().filter((name) => name.endsWith(target.uuid))).toHaveLength(1);
    expect(fs.readdirSync(path.join(dataDir, 'run/network')).filter((name) => name.endsWith('.json'))).toEqual([
      `${target.uuid}.json`,
    ]);
    expect((nftTable(runtime.network.tableName) ?? '').match(new RegExp(`\\b${port} :`, 'g'))).toHaveLength(2);

    // Killed: unpublished, its namespace, record and table gone.
    await daemon.power(target, 'kill');
    await eventually(async () => (await daemon.state(target)) === 'offline', 15_000, 'the adopted server to end');
    await expect(tcpAsk('127.0.0.1', port, 'hello', 1_000)).rejects.toThrow();
    expect(namespaces().filter((name) => name.endsWith(target.uuid))).toEqual([]);
    expect(fs.readdirSync(path.join(dataDir, 'run/network')).filter((name) => name.endsWith('.json'))).toEqual([]);
    expect(nftTable(runtime.network.tableName)).toBeNull();

    fs.rmSync(path.join(daemon.volumeDir(target.uuid), 'ready'));
    await daemon.power(target, 'start');
    await volumeFile(daemon, target, 'ready');
    expect((await tcpAsk('127.0.0.1', port)).startsWith('crashed ')).toBe(true);
    expect(namespaces().filter((name) => name.endsWith(target.uuid))).toHaveLength(1);
    const table = nftTable(runtime.network.tableName) ?? '';
    expect(table.match(new RegExp(`\\b${port} :`, 'g'))).toHaveLength(2); // tcp_any and udp_any, once each
  });

  it('removes what a crash halfway through an attach leaves: a namespace with no record, a record with no server, a stale table', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quetzal-net-leftover-'));
    // A first daemon only to learn the names this DATA_DIR's service uses; it runs nothing.
    const first = await networkDaemon(dataDir);
    const network = first.runtime.network;
    const orphanUuid = '00000000-0000-4000-8000-00000000a001';
    const recordedUuid = '00000000-0000-4000-8000-00000000a002';
    execFileSync('ip', ['netns', 'add', network.namespaceName(orphanUuid)]);
    execFileSync('ip', ['netns', 'add', network.namespaceName(recordedUuid)]);
    const recordFile = path.join(dataDir, 'run/network', `${recordedUuid}.json`);
    fs.writeFileSync(
      recordFile,
      JSON.stringify({
        serverUuid: recordedUuid,
        namespace: network.namespaceName(recordedUuid),
        hostInterface: 'qz0a4dfff0',
        gateway: '10.77.255.241',
        inside: '10.77.255.242',
        allocations: [{ ip: '0.0.0.0', port: randomPort() }],
      }),
    );
    await network.applyTable();
    expect(nftTable(network.tableName)).toContain('10.77.255.242');

    // The next start, with no pid file naming either server.
    await networkDaemon(dataDir);
    expect(
      namespaces().filter((name) => name === network.namespaceName(orphanUuid) || name === network.namespaceName(recordedUuid)),
    ).toEqual([]);
    expect(fs.existsSync(recordFile)).toBe(false);
    expect(nftTable(network.tableName)).toBeNull();
  });
});
