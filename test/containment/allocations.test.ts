/**
 * docs/reference/network-and-allocations.md end to end, through a real service with CONTAINMENT=on: the admin
 * makes allocations with the command line, `server:create --allocation`
 * gives one to a server, the client routes add and change them, and a start
 * publishes them into the server's own network for TCP and UDP, with
 * SERVER_IP and SERVER_PORT in its environment. A change takes effect at the
 * next start, as in Pterodactyl. The tenant is a real program in its volume,
 * bound to 0.0.0.0 inside its namespace.
 */
import crypto from 'node:crypto';
import dgram from 'node:dgram';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  api,
  cli,
  power,
  resources,
  serverUid,
  startService,
  stopService,
  waitFor,
  waitState,
  type ServiceHandle,
  type TestServer,
} from './confined-service.js';

/**
 * Answers each TCP connection and each UDP datagram, on SERVER_PORT and on
 * every port in ports.txt, with `<protocol> <SERVER_IP>:<SERVER_PORT> <local port>`;
 * writes `ready` once every socket is bound.
 */
const TENANT = `
import os, socket, threading
ip, port = os.environ.get('SERVER_IP', ''), os.environ.get('SERVER_PORT', '')
ports = {int(port)} | {int(p) for p in open('ports.txt').read().split()}
def tcp(p):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', p)); s.listen(16)
    return s
def serve_tcp(s, p):
    while True:
        c, _ = s.accept(); c.sendall(f'tcp {ip}:{port} {p}\\n'.encode()); c.close()
def serve_udp(s, p):
    while True:
        _, peer = s.recvfrom(512); s.sendto(f'udp {ip}:{port} {p}\\n'.encode(), peer)
for p in ports:
    t = tcp(p); threading.Thread(target=serve_tcp, args=(t, p), daemon=True).start()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(('0.0.0.0', p))
    threading.Thread(target=serve_udp, args=(u, p), daemon=True).start()
open('ready.partial', 'w').write(' '.join(map(str, sorted(ports)))); os.rename('ready.partial', 'ready')
threading.Event().wait()
`;

let handle: ServiceHandle;

beforeAll(async () => {
  handle = await startService();
}, 90_000);

afterAll(async () => {
  if (!handle) return;
  const left = await stopService(handle);
  fs.rmSync(handle.dataDir, { recursive: true, force: true });
  expect(left, 'containers left by a graceful stop').toEqual([]);
}, 60_000);

/** Three consecutive free-looking ports in a high range, picked at random (other tests run at once). */
function randomPorts(): [number, number, number] {
  const base = 40_000 + crypto.randomInt(0, 20_000);
  return [base, base + 1, base + 2];
}

/** The first line the published port answers over TCP, or null when nothing answers within a second. */
function tcpAnswer(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    let text = '';
    const socket = net.connect({ host, port });
    socket.setTimeout(1_000, () => socket.destroy());
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.on('error', () => resolve(null));
    socket.on('close', () => resolve(text === '' ? null : text.trim()));
  });
}

function udpAnswer(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = dgram.createSocket('udp4');
    const timer = setTimeout(() => {
      socket.close();
      resolve(null);
    }, 1_000);
    socket.on('message', (message) => {
      clearTimeout(timer);
      socket.close();
      resolve(message.toString().trim());
    });
    socket.send('ping', port, host);
  });
}

async function startAndWait(server: TestServer): Promise<string> {
  const ready = path.join(server.volumeDir, 'ready');
  fs.rmSync(ready, { force: true });
  await power(handle, server, 'start');
  await waitFor(() => fs.existsSync(ready), `${server.identifier} bound its ports`, 20_000);
  return fs.readFileSync(ready, 'utf8');
}

async function stopAndWait(server: TestServer): Promise<void> {
  await power(handle, server, 'kill');
  await waitState(handle, server, 'offline', 20_000);
}

describe('allocations through a real service', () => {
  it('publishes the primary allocation for TCP and UDP, adds and switches allocations at the next start, and counts the traffic', async () => {
    const [first, second, third] = randomPorts();
    expect(await cli(handle, ['allocation:add', '--ip', '127.0.0.1', '--ports', `${first}-${third}`])).toEqual({ created: 3 });
    const created = await cli(handle, [
      'server:create',
      '--owner',
      'admin',
      '--name',
      'published',
      '--startup',
      'exec python3 tenant.py',
      '--allocation',
      `127.0.0.1:${first}`,
      '--allocation-limit',
      '2',
    ]);
    const uuid = String(created.uuid);
    const server: TestServer = {
      uuid,
      identifier: String(created.identifier),
      uid: serverUid(handle, uuid),
      volumeDir: path.join(handle.dataDir, 'volumes', uuid),
      logFile: path.join(handle.dataDir, 'logs', `${uuid}.log`),
    };
    // The tenant listens on all three ports, published or not: only what is published may answer.
    fs.writeFileSync(path.join(server.volumeDir, 'tenant.py'), TENANT);
    fs.writeFileSync(path.join(server.volumeDir, 'ports.txt'), `${first} ${second} ${third}`);

    const listed = await cli(handle, ['allocation:list', '--server', uuid]);
    expect(listed.allocations).toEqual([expect.objectContaining({ ip: '127.0.0.1', port: first, server: uuid })]);

    await startAndWait(server);
    expect(await tcpAnswer('127.0.0.1', first)).toBe(`tcp 127.0.0.1:${first} ${first}`);
    expect(await udpAnswer('127.0.0.1', first)).toBe(`udp 127.0.0.1:${first} ${first}`);
    // Listening inside is not being published.
    expect(await tcpAnswer('127.0.0.1', second)).toBeNull();
    expect(await udpAnswer('127.0.0.1', second)).toBeNull();
    await waitFor(
      async () => {
        const { resources: figures } = await resources(handle, server);
        return figures.network_rx_bytes > 0 && figures.network_tx_bytes > 0;
      },
      'network counters that grew with the traffic',
      10_000,
    );

    // A user adds one (the next free port on the primary's IP); it is published from the next start on.
    const added = await api(handle, 'POST', `/api/client/servers/${server.identifier}/network/allocations`);
    expect(added.status).toBe(200);
    expect(added.body.attributes).toMatchObject({ ip: '127.0.0.1', port: second, is_default: false });
    expect(await tcpAnswer('127.0.0.1', second)).toBeNull();
    await stopAndWait(server);
    await startAndWait(server);
    expect(await tcpAnswer('127.0.0.1', second)).toBe(`tcp 127.0.0.1:${first} ${second}`);
    expect(await udpAnswer('127.0.0.1', second)).toBe(`udp 127.0.0.1:${first} ${second}`);
    expect(await tcpAnswer('127.0.0.1', third)).toBeNull();

    // Made primary: SERVER_PORT follows at the next start; at the limit, a third is refused.
    const primary = await api(
      handle,
      'POST',
      `/api/client/servers/${server.identifier}/network/allocations/${added.body.attributes.id}/primary`,
    );
    expect(primary.status).toBe(200);
    expect((await api(handle, 'POST', `/api/client/servers/${server.identifier}/network/allocations`)).status).toBe(400);
    await stopAndWait(server);
    await startAndWait(server);
    expect(await tcpAnswer('127.0.0.1', first)).toBe(`tcp 127.0.0.1:${second} ${first}`);

    // Removed: not published at the next start, and free again for the admin to remove.
    const firstId = (await api(handle, 'GET', `/api/client/servers/${server.identifier}/network/allocations`)).body.data.find(
      (item: { attributes: { port: number } }) => item.attributes.port === first,
    ).attributes.id;
    expect((await api(handle, 'DELETE', `/api/client/servers/${server.identifier}/network/allocations/${firstId}`)).status).toBe(
      204,
    );
    await stopAndWait(server);
    await startAndWait(server);
    expect(await tcpAnswer('127.0.0.1', first)).toBeNull();
    expect(await tcpAnswer('127.0.0.1', second)).toBe(`tcp 127.0.0.1:${second} ${second}`);
    await stopAndWait(server);
    // Nothing published once it is offline.
    expect(await tcpAnswer('127.0.0.1', second)).toBeNull();
    expect(await cli(handle, ['allocation:remove', '--ip', '127.0.0.1', '--ports', `${first}`])).toEqual({ removed: 1 });
  }, 120_000);
});
