/**
 * docs/reference/network-and-allocations.md and docs/reference/containment.md's network rules, tried by tenants from inside real
 * confined servers: no host service on any host address answers them (the
 * test's own listener on every address, PostgreSQL, MariaDB and Redis ports,
 * the metadata address), another server's inside address does not, its
 * published allocation does; a server binding another's port number in its
 * own namespace gets none of its connections; one with no allocation is not
 * published; outbound traffic is masqueraded to the outside world (here a
 * namespace the test makes, never a real outside address).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  ECHO_TENANT,
  HOST_ADDRESS,
  insideAddress,
  networkDaemon,
  nftTable,
  onCleanup,
  parseReport,
  PROBE_TENANT,
  randomPort,
  server,
  tcpAsk,
  volumeFile,
  withFiles,
} from './helpers.js';

/** A listener of the test's on every host address (IPv4 and IPv6): a host service a tenant must not reach. */
async function hostService(): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  const listener = net.createServer((socket) => {
    connections++;
    socket.end('host-service\n');
  });
  const port = randomPort();
  await new Promise<void>((resolve, reject) =>
    listener.once('error', reject).listen({ port, host: '::', ipv6Only: false }, resolve),
  );
  onCleanup(() => {
    listener.close();
  });
  return { port, connections: () => connections };
}

describe('isolation of confined servers', () => {
  it('reach no host service on any host address, nor another server directly, but reach its published port', async () => {
    const { daemon, dataDir } = await networkDaemon();
    const host = await hostService();
    const publishedPort = randomPort();
    const victim = server('exec python3 tenant.py', [{ ip: '0.0.0.0', port: publishedPort }]);
    await withFiles(daemon, victim, { 'tenant.py': ECHO_TENANT, 'name.txt': 'victim' });
    await daemon.power(victim, 'start');
    await volumeFile(daemon, victim, 'ready');
    const victimInside = insideAddress(dataDir, victim.uuid);

    const attacker = server('exec python3 probe.py');
    const targets = [
      ['loopback', '127.0.0.1', host.port],
      ['loopback-2', '127.0.0.2', host.port],
      ['loopback-other', '127.1.2.3', host.port],
      ['host-address', HOST_ADDRESS, host.port],
      ['host-ipv6-loopback', '::1', host.port],
      ['gateway', 'GATEWAY', host.port],
      ['postgresql', '127.0.0.1', 5432],
      ['postgresql-host-address', HOST_ADDRESS, 5432],
      ['mariadb', '127.0.0.1', 3306],
      ['redis', '127.0.0.1', 6379],
      ['metadata', '169.254.169.254', 80],
      ['victim-inside', victimInside, publishedPort],
      ['victim-published', HOST_ADDRESS, publishedPort],
    ];
    await withFiles(daemon, attacker, { 'probe.py': PROBE_TENANT, 'targets.txt': targets.map((t) => t.join(' ')).join('\n') });
    await daemon.power(attacker, 'start');
    const report = parseReport(await volumeFile(daemon, attacker, 'report.txt'));
    for (const label of targets.slice(0, -1).map((t) => String(t[0])))
      expect(`${label}: ${report.get(label)}`).toMatch(new RegExp(`^${label}: fail`));
    // Through its allocation, as any outsider: the victim sees the attacker's gateway, not its inside address.
    expect(report.get('victim-published')).toMatch(/^ok victim_0\.0\.0\.0_\d+_10\.77\./);
    expect(report.get('victim-published')).not.toContain(insideAddress(dataDir, attacker.uuid));
    expect(host.connections()).toBe(0);
    // The test's own listener was reachable all along from the host itself.
    expect(await tcpAsk('127.0.0.1', host.port)).toBe('host-service\n');
  });

  it("a server binding another's port with SO_REUSEPORT in its own namespace gets none of its connections", async () => {
    const { daemon } = await networkDaemon();
    const port = randomPort();
    const owner = server('exec python3 tenant.py', [{ ip: '0.0.0.0', port }]);
    await withFiles(daemon, owner, { 'tenant.py': ECHO_TENANT, 'name.txt': 'owner' });
    const squatter = server(`exec python3 tenant.py`, [{ ip: '0.0.0.0', port: randomPort() }]);
    // The squatter's own SERVER_PORT is replaced with the owner's port, with SO_REUSEPORT on.
    const squat = ECHO_TENANT.replace("port = int(os.environ.get('SERVER_PORT', '0'))", `port = ${port}`).replace(
      's.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)',
      's.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)',
    );
    await withFiles(daemon, squatter, { 'tenant.py': squat, 'name.txt': 'squatter' });
    await daemon.power(owner, 'start');
    await daemon.power(squatter, 'start');
    await volumeFile(daemon, owner, 'ready');
    await volumeFile(daemon, squatter, 'ready');
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => tcpAsk(i % 2 === 0 ? '127.0.0.1' : HOST_ADDRESS, port).then((a) => a.split(' ')[0])),
    );
    expect(new Set(answers)).toEqual(new Set(['owner']));
  });

  it('publishes nothing for a server with no allocation', async () => {
    const { daemon, dataDir, runtime } = await networkDaemon();
    const port = randomPort();
    const target = server(`SERVER_PORT=${port} exec python3 tenant.py`);
    await withFiles(daemon, target, { 'tenant.py': ECHO_TENANT, 'name.txt': 'unpublished' });
    await daemon.power(target, 'start');
    await volumeFile(daemon, target, 'ready');
    await expect(tcpAsk('127.0.0.1', port, 'hello', 1_000)).rejects.toThrow();
    await expect(tcpAsk(HOST_ADDRESS, port, 'hello', 1_000)).rejects.toThrow();
    const table = nftTable(runtime.network.tableName) ?? '';
    expect(table).toContain('chain forward');
    expect(table).not.toContain(insideAddress(dataDir, target.uuid));
  });

  it('reaches the outside world through NAT, with a resolver it can reach', async () => {
    const outside = await outsideWorld();
    const { daemon } = await networkDaemon();
    const target = server('cp /etc/resolv.conf resolv.seen; exec python3 probe.py');
    await withFiles(daemon, target, { 'probe.py': PROBE_TENANT, 'targets.txt': `outside ${outside.address} ${outside.port}` });
    await daemon.power(target, 'start');
    const report = parseReport(await volumeFile(daemon, target, 'report.txt'));
    // Masqueraded: the outside sees the host's address on its link, not the server's inside one.
    expect(report.get('outside')).toBe(`ok outside-world_${outside.hostSide}`);
    const resolv = await volumeFile(daemon, target, 'resolv.seen');
    expect(resolv).toMatch(/^nameserver \d+\.\d+\.\d+\.\d+$/m);
    expect(resolv).not.toMatch(/^nameserver 127\./m);
  });
});

/**
 * "The outside world": a namespace of the test's own, routed from the host
 * through a veth pair (not a server interface), with a TCP service that
 * answers with the address it saw.
 */
async function outsideWorld(): Promise<{ address: string; hostSide: string; port: number }> {
  const tag = randomBytes(3).toString('hex');
  const namespace = `quetzal-test-outside-${tag}`;
  const hostIf = `qt${tag}`;
  const third = 16 + (parseInt(tag, 16) % 200);
  const hostSide = `172.31.${third}.1`;
  const address = `172.31.${third}.2`;
  const port = randomPort();
  const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });
  ip('netns', 'add', namespace);
  onCleanup(() => {
    execFileSync('ip', ['netns', 'del', namespace], { stdio: 'ignore' });
  });
  ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace);
  ip('addr', 'add', `${hostSide}/30`, 'dev', hostIf);
  ip('link', 'set', hostIf, 'up');
  ip('-n', namespace, 'addr', 'add', `${address}/30`, 'dev', 'eth0');
  ip('-n', namespace, 'link', 'set', 'eth0', 'up');
  const script = `
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('${address}', ${port})); s.listen(8)
print('listening', flush=True)
while True:
    c, peer = s.accept(); c.sendall(f"outside-world {peer[0]}\\n".encode()); c.close()
`;
  const child = spawn('ip', ['netns', 'exec', namespace, 'python3', '-c', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  onCleanup(() => {
    child.kill('SIGKILL');
  });
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  return { address, hostSide, port };
}
