/**
 * Whether this machine can give servers networks of their own (docs/reference/network-and-allocations.md),
 * decided once at start with the rest of containment: `ip` and `nft` are
 * there and work (root, CAP_NET_ADMIN), forwarding is on, and the resolver
 * file containers get is written.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseAddressPool, DEFAULT_SERVER_NETWORK } from '../../../server-address-pool.js';
import { containerResolvConf } from './resolver.js';
import { ServerNetwork, type NetworkLogger } from './server-network.js';
import { findTool, runTool } from './tools.js';

const IP_FORWARD = '/proc/sys/net/ipv4/ip_forward';
const SYSTEMD_UPSTREAM = '/run/systemd/resolve/resolv.conf';

export interface NetworkSettings {
  readonly runDir: string;
  /** SERVER_NETWORK (a CIDR); default DEFAULT_SERVER_NETWORK. */
  readonly serverNetwork?: string;
  readonly log: NetworkLogger;
  /** Where a program is (tools.ts's findTool); a test passes one that finds nothing. */
  readonly find?: (name: string) => string | null;
}

/** The network, or why servers cannot have one here (then containment is unavailable: docs/reference/network-and-allocations.md's fallback). */
export async function resolveServerNetwork(settings: NetworkSettings): Promise<{ network: ServerNetwork } | { reason: string }> {
  const pool = parseAddressPool(settings.serverNetwork ?? DEFAULT_SERVER_NETWORK);
  const find = settings.find ?? findTool;
  const ip = find('ip');
  if (ip === null)
    return { reason: 'ip (iproute2) is not installed, which server networks need (Debian and Ubuntu: apt-get install iproute2)' };
  const nft = find('nft');
  if (nft === null)
    return { reason: 'nft is not installed, which server networks need (Debian and Ubuntu: apt-get install nftables)' };
  try {
    await runTool(nft, ['list', 'tables']);
    await runTool(ip, ['netns', 'list']);
  } catch (err) {
    return { reason: `cannot manage network namespaces and firewall rules here: ${(err as Error).message}` };
  }
  try {
    // Players' traffic to servers and servers' to the world is routed: Docker and Wings turn this on too.
    if (fs.readFileSync(IP_FORWARD, 'utf8').trim() !== '1') fs.writeFileSync(IP_FORWARD, '1');
  } catch (err) {
    return { reason: `cannot turn IPv4 forwarding on (${IP_FORWARD}): ${(err as Error).message}` };
  }
  const resolver = containerResolvConf(
    readOrEmpty('/etc/resolv.conf'),
    fs.existsSync(SYSTEMD_UPSTREAM) ? readOrEmpty(SYSTEMD_UPSTREAM) : null,
  );
  if (resolver.problem !== null)
    settings.log.warn({ problem: resolver.problem }, 'game servers will have no DNS resolver: name lookups inside them fail');
  const dir = path.join(settings.runDir, 'network');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const resolvConf = path.join(dir, 'resolv.conf');
  // Bound read-only into containers; readable by their uid.
  const temp = `${resolvConf}.${process.pid}.tmp`;
  fs.writeFileSync(temp, resolver.text, { mode: 0o644 });
  fs.renameSync(temp, resolvConf);
  const uplinkMtu = await defaultRouteMtu(ip);
  return { network: new ServerNetwork({ runDir: settings.runDir, pool, ip, nft, resolvConf, uplinkMtu, log: settings.log }) };
}

/** The MTU of the interface the host's default route uses; 1500 (Ethernet's) when there is none. */
async function defaultRouteMtu(ip: string): Promise<number> {
  try {
    const routes = JSON.parse(await runTool(ip, ['-j', 'route', 'show', 'default'])) as { dev?: string; mtu?: number }[];
    const route = routes.find((r) => r.dev !== undefined);
    if (route?.mtu) return route.mtu;
    if (route?.dev && /^[\w.-]+$/.test(route.dev))
      return Number(fs.readFileSync(`/sys/class/net/${route.dev}/mtu`, 'utf8')) || 1500;
  } catch {
    // No default route, or no JSON: Ethernet's.
  }
  return 1500;
}

function readOrEmpty(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
