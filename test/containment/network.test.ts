/**
 * docs/reference/network-and-allocations.md and docs/reference/containment.md's network rules through a real service with
 * CONTAINMENT=on (HOST=0.0.0.0, so that the panel answers on every host
 * address): servers made with the admin command line, whose startup scripts
 * in their volumes act as hostile tenants. They reach no host service on any
 * host address (the panel's port, PostgreSQL, MariaDB, Redis, the metadata
 * address), and a tenant that binds the panel's port in its own namespace
 * gets none of the panel's connections, before, during and after a graceful
 * restart. Published allocations are tested at the daemon level
 * (test/daemon/local/network/) until the admin command line makes them.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROBE_TENANT, parseReport } from '../daemon/local/network/helpers.js';
import {
  api,
  createServer,
  launchService,
  power,
  sleep,
  startService,
  stopService,
  waitFor,
  waitState,
  type ServiceHandle,
  type TestServer,
} from './confined-service.js';
import { waitHealthy } from '../platform/service-process.js';

const HOST_ADDRESS = '192.0.2.2';
let handle: ServiceHandle;

beforeAll(async () => {
  handle = await startService(undefined, undefined, { HOST: '0.0.0.0' });
}, 90_000);

afterAll(async () => {
  if (!handle) return;
  const left = await stopService(handle);
  fs.rmSync(handle.dataDir, { recursive: true, force: true });
  expect(left, 'containers left by a graceful stop').toEqual([]);
}, 60_000);

async function volumeFile(server: TestServer, name: string, timeoutMs = 20_000): Promise<string> {
  const file = path.join(server.volumeDir, name);
  await waitFor(() => fs.existsSync(file), `${name} in ${server.identifier}'s volume`, timeoutMs);
  return fs.readFileSync(file, 'utf8');
}

/** Listens on the panel's port inside its own namespace (SO_REUSEPORT, as a squatter would) and notes every connection. */
function squatterScript(port: number): string {
  return `
import os, socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(('0.0.0.0', ${port})); s.listen(64)
open('bound.partial', 'w').write('bound'); os.rename('bound.partial', 'bound')
while True:
    c, peer = s.accept()
    with open('accepted.txt', 'a') as f: f.write(peer[0] + '\\n')
    c.close()
`;
}

function tcpReachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.setTimeout(1_000, () => socket.destroy());
    socket.on('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
    socket.on('close', () => resolve(false));
  });
}

describe('a confined server on the network, through a real service', () => {
  it('reaches no host service on any host address: not the panel, not PostgreSQL, MariaDB, Redis, nor 169.254.169.254', async () => {
    const targets = [
      ['panel-loopback', '127.0.0.1', handle.port],
      ['panel-host-address', HOST_ADDRESS, handle.port],
      ['panel-gateway', 'GATEWAY', handle.port],
      ['panel-ipv6-loopback', '::1', handle.port],
      ['postgresql', '127.0.0.1', 5432],
      ['postgresql-host-address', HOST_ADDRESS, 5432],
      ['postgresql-gateway', 'GATEWAY', 5432],
      ['mariadb-host-address', HOST_ADDRESS, 3306],
      ['redis-host-address', HOST_ADDRESS, 6379],
      ['metadata', '169.254.169.254', 80],
    ];
    const server = await createServer(handle, {
      name: 'prober',
      startup: 'exec python3 probe.py',
      files: { 'probe.py': PROBE_TENANT, 'targets.txt': targets.map((t) => t.join(' ')).join('\n') },
    });
    await power(handle, server, 'start');
    const report = parseReport(await volumeFile(server, 'report.txt'));
    for (const label of targets.map((t) => String(t[0])))
      expect(`${label}: ${report.get(label)}`).toMatch(new RegExp(`^${label}: fail`));
    // The panel does answer on the host address, from the host: the tenant's failure is the firewall's doing.
    expect(await tcpReachable(HOST_ADDRESS, handle.port)).toBe(true);
    await power(handle, server, 'kill');
    await waitState(handle, server, 'offline', 20_000);
  });

  it("a tenant bound to the panel's port in its own namespace gets none of its connections across a graceful restart", async () => {
    const squatter = await createServer(handle, {
      name: 'squatter',
      startup: 'exec python3 squat.py',
      files: { 'squat.py': squatterScript(handle.port) },
    });
    await power(handle, squatter, 'start');
    await volumeFile(squatter, 'bound');
    const health = async () => (await api(handle, 'GET', '/health')).status;
    expect(await health()).toBe(200);

    // Graceful restart: while no panel listens, connections to its port find nobody; none reach the tenant.
    handle.service.proc.kill('SIGTERM');
    const attempts: Promise<boolean>[] = [];
    const during = setInterval(
      () => attempts.push(tcpReachable('127.0.0.1', handle.port), tcpReachable(HOST_ADDRESS, handle.port)),
      20,
    );
    await handle.service.exited;
    await sleep(300);
    const first = handle.service;
    // Stopped with the service (SERVERS_ON_SHUTDOWN=stop's behaviour): its network went with it.
    expect(
      fs.readdirSync(path.join(handle.dataDir, 'run/network')).filter((n) => n.endsWith('.json')),
      first.output(),
    ).toEqual([]);
    const restarted = launchService(handle.env);
    await waitHealthy(restarted, 60_000);
    clearInterval(during);
    await Promise.all(attempts);
    handle = { ...handle, service: restarted };
    expect(await health()).toBe(200);
    expect(fs.existsSync(path.join(squatter.volumeDir, 'accepted.txt'))).toBe(false);
  }, 120_000);
});
