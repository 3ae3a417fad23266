/**
 * docs/reference/network-and-allocations.md at the daemon: a confined server's allocations are published for
 * TCP and UDP on the same port inside, from this machine's loopback and its
 * own address; SERVER_IP and SERVER_PORT are in its environment; a server
 * with no allocation has no published port; its traffic shows in /resources.
 */
import { describe, expect, it } from 'vitest';
import {
  ECHO_TENANT,
  eventually,
  HOST_ADDRESS,
  insideAddress,
  tcpAsk,
  udpAsk,
  networkDaemon,
  nftTable,
  randomPort,
  server,
  volumeFile,
  withFiles,
} from './helpers.js';

describe("a confined server's own network", () => {
  it('publishes its allocation for TCP and UDP from 127.0.0.1 and from the machine address, with SERVER_IP and SERVER_PORT set', async () => {
    const { daemon, dataDir, runtime } = await networkDaemon();
    const port = randomPort();
    const target = server('exec python3 tenant.py', [{ ip: '0.0.0.0', port }]);
    await withFiles(daemon, target, { 'tenant.py': ECHO_TENANT, 'name.txt': 'alpha' });
    await daemon.power(target, 'start');
    await volumeFile(daemon, target, 'ready');
    const inside = insideAddress(dataDir, target.uuid);
    expect(inside).toMatch(/^10\.77\./);

    const fromLoopback = await tcpAsk('127.0.0.1', port);
    expect(fromLoopback.trim().split(' ').slice(0, 3)).toEqual(['alpha', '0.0.0.0', String(port)]);
    const fromAddress = await tcpAsk(HOST_ADDRESS, port);
    expect(fromAddress.startsWith('alpha ')).toBe(true);
    // A player's address is kept (no masquerade from the machine's own address); loopback is masqueraded to the gateway.
    expect(fromAddress.trim().split(' ')[3]).toBe(HOST_ADDRESS);
    expect((await udpAsk('127.0.0.1', port)).startsWith('alpha ')).toBe(true);
    expect((await udpAsk(HOST_ADDRESS, port)).startsWith('alpha ')).toBe(true);

    // The sampler's next round (every 2 s) reads the veth's counters.
    const resources = await eventually(
      async () => {
        const now = await daemon.resources(target);
        return now.networkRxBytes > 0 && now.networkTxBytes > 0 && now;
      },
      5_000,
      'network counters',
    );
    // Four answers went out, four questions came in: the counters are the server's, not swapped.
    expect(resources.networkTxBytes).toBeGreaterThan(4 * 20);
    expect(resources.networkRxBytes).toBeGreaterThan(4 * 5);

    await daemon.power(target, 'kill');
    // Unpublished with the server: nothing answers any more, and the table is gone with the last server.
    await expect(tcpAsk('127.0.0.1', port, 'hello', 1_000)).rejects.toThrow();
    expect(nftTable(runtime.network.tableName)).toBeNull();
  });
});
